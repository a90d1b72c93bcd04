-- scripts/gpu-check.d/report.lua: DIR/report.md and DIR/report.json from what
-- scripts/gpu-check left in DIR: steps.tsv (each step's status, seconds, log) and the
-- benches' runs in the store this script runs on (--db DIR/bench.db). Every figure is
-- given with its baseline, measured in the same bench run, its unit and the ratio.
local exp = require "lt.study"
-- hbm_gbps: the device's memory bandwidth (GB/s), for decode's fraction of its floor (0: none)
local cfg = exp.args{ out = "", on = "", quick = 0, hbm_gbps = 0 }  -- on: the device checked (cuda, cpu)
assert(cfg.out ~= "", "report.lua: --out=DIR is required")

local steps = {}
for line in io.lines(cfg.out .. "/steps.tsv") do
  local name, rc, secs, log = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
  if name then steps[#steps + 1] = { name = name, rc = rc, seconds = tonumber(secs), log = log } end
end

-- the latest run of each bench script, by the script's file name
local function bench_run(script)
  local rows = lt.run.query([[SELECT id, status FROM runs WHERE parent_id IS NULL AND
    script_path LIKE ? ORDER BY id DESC LIMIT 1]], "%/bench/" .. script .. ".lua")
  return rows[1]
end
-- a metric's last value in a run (at a step, or the last step)
local function metric(run, name, step)
  if not run then return nil end
  local rows
  if step then
    rows = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = ? AND step = ? ORDER BY rowid DESC LIMIT 1",
                        run.id, name, step)
  else
    rows = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = ? ORDER BY step DESC, rowid DESC LIMIT 1",
                        run.id, name)
  end
  return rows[1] and rows[1].value
end
local function param(run, key)
  if not run then return nil end
  local rows = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = ?", run.id, key)
  return rows[1] and rows[1].value
end
local function max_step(run, name)
  if not run then return nil end
  local rows = lt.run.query("SELECT max(step) AS s FROM metrics WHERE run_id = ? AND name = ?", run.id, name)
  return rows[1] and rows[1].s
end

local figures = {}
-- fig(bench, what, value, unit, baseline_name, baseline_value): one row of the report
local function fig(bench, what, value, unit, base_name, base_value, note)
  if value == nil then return end
  figures[#figures + 1] = { bench = bench, figure = what, value = value, unit = unit,
                            baseline = base_name, baseline_value = base_value,
                            ratio = base_value and base_value ~= 0 and value / base_value or nil, note = note }
end

local train, grpo, fwd, tracer, ev = bench_run("train"), bench_run("grpo"), bench_run("forward"),
                                     bench_run("layer_tracer"), bench_run("eval")
do
  local full = metric(train, "tokens_per_s/full")
  fig("train", "full training", full, "tokens/s", nil, nil)
  local mfu = metric(train, "mfu/full")
  if mfu then fig("train", "MFU of full training", mfu, "fraction of peak", "peak bf16 TFLOP/s", 1,
                  "6 x trainable params x tokens/s / peak") end
  for _, plan in ipairs{ "train_deep", "train_shallow", "last_block", "full_checkpointed" } do
    fig("train", plan .. " training", metric(train, "tokens_per_s/" .. plan), "tokens/s", "full training", full)
  end
end
do
  local ro, gen = metric(grpo, "rollout_tokens_per_s"), metric(grpo, "generate_tokens_per_s")
  fig("grpo", "rollout (sampling, log-probs, packing)", ro, "tokens/s", "plain generate, same rows and sampling", gen)
  local off, both = metric(grpo, "rollout_tokens_per_s/off"), metric(grpo, "rollout_tokens_per_s/both")
  fig("grpo", "rollout, shared prefill + finished rows dropped (mixed lengths)", both, "tokens/s",
      "both off, same tokens", off)
  local hf = metric(grpo, "hf_generate_tokens_per_s")
  if hf then
    fig("grpo", "rollout, shared prefill + finished rows dropped (mixed lengths)", both, "tokens/s",
        "HF generate, same checkpoint, prompts, stops and sampling", hf)
  end
  for _, k in ipairs{ "rollout", "reference", "old_logprobs", "update" } do
    fig("grpo", "GRPO step time: " .. k, metric(grpo, "time_frac/" .. k), "fraction of step", nil, nil)
  end
  fig("grpo", "reference log-probs, shared prefix", metric(grpo, "reference_s/shared_prefix"), "s",
      "a copied reference", metric(grpo, "reference_s/copy"))
end
do
  local b = max_step(fwd, "prefill_tokens_per_s")
  if b then
    fig("forward", ("prefill, batch %d"):format(b), metric(fwd, "prefill_tokens_per_s", b), "tokens/s",
        "HF transformers, same checkpoint", metric(fwd, "hf_prefill_tokens_per_s", b))
    fig("forward", ("greedy decode, batch %d"):format(b), metric(fwd, "decode_tokens_per_s", b), "tokens/s",
        "HF transformers generate, same checkpoint", metric(fwd, "hf_decode_tokens_per_s", b))
    fig("forward", ("greedy decode, batch %d"):format(b), metric(fwd, "decode_tokens_per_s", b), "tokens/s",
        "ltrun at batch 1", metric(fwd, "decode_tokens_per_s", 1))
  end
  -- of the limit: a decode step reads every weight once and each row's keys and values so far;
  -- at the device's bandwidth that takes `floor` seconds, against batch / (tokens/s) measured
  local wb, kv = tonumber(param(fwd, "decode_weight_bytes")), tonumber(param(fwd, "kv_bytes_per_token"))
  local pos = tonumber(param(fwd, "decode_positions_mean"))
  if cfg.hbm_gbps > 0 and wb and kv and pos then
    for _, bb in ipairs(b ~= 1 and { 1, b } or { 1 }) do
      local tps = metric(fwd, "decode_tokens_per_s", bb)
      if tps then
        local floor = (wb + bb * pos * kv) / (cfg.hbm_gbps * 1e9)
        fig("forward", ("greedy decode, batch %d: of the HBM-bandwidth floor"):format(bb), floor / (bb / tps),
            "fraction of the limit", nil, nil, ("%.0f GB/s; weights %.0f MB, cache %.0f B per position"):format(
            cfg.hbm_gbps, wb / 1e6, kv))
      end
    end
  end
end
do
  local p = metric(tracer, "samples_per_s_prefix")
  fig("layer_tracer", "LayerTracer (prefix)", p, "samples/s", "batched HF + hooks", metric(tracer, "samples_per_s_hf"))
  fig("layer_tracer", "LayerTracer (prefix)", p, "samples/s", "naive, batched", metric(tracer, "samples_per_s_naive_batched"))
  fig("layer_tracer", "largest JS difference, prefix vs naive", metric(tracer, "max_js_diff_prefix_naive"), "nats", nil, nil)
end
do
  for _, proto in ipairs{ "logit", "generate" } do
    fig("eval", "C-Eval-format " .. proto .. " protocol", metric(ev, proto .. "/items_per_s"), "items/s",
        "the same at batch 1", metric(ev, proto .. "/items_per_s_batch1"))
  end
  fig("eval", "C-Eval-format generate protocol, refill (continuous batching)", metric(ev, "generate/items_per_s_refill"),
      "items/s", "length buckets, same batch size", metric(ev, "generate/items_per_s"))
end

do  -- issue 35's CPU proxies (experiments/bench/proxies.lua): counts, the same on any host
  local px = bench_run("proxies")
  fig("proxies", "ATen kernels per block per decode step", metric(px, "decode_kernels_per_block"), "kernels",
      "issue 35's target", 15)
  fig("proxies", "training step peak tensor bytes, Qwen3 vocabulary", metric(px, "train_step_peak_bytes"), "bytes",
      "the plain loss over [T, V] logits", metric(px, "train_step_peak_bytes/plain_loss"), param(px, "proxy_shape"))
end

local env = {}
local f = io.open(cfg.out .. "/env.txt")
if f then for line in f:lines() do env[#env + 1] = line end f:close() end
local n_failed = 0
for _, s in ipairs(steps) do if s.rc ~= "0" and s.rc ~= "skipped" then n_failed = n_failed + 1 end end

local report = { device = cfg.on, quick = cfg.quick ~= 0, env = env, steps = steps, figures = figures,
                 failed_steps = n_failed,
                 shape = param(train, "model") and { model = param(train, "model") } or nil }
local jf = assert(io.open(cfg.out .. "/report.json", "w"))
jf:write(lt.json.encode(report), "\n")
jf:close()

local function num(v)
  if v == nil then return "" end
  if math.abs(v) >= 100 then return ("%.0f"):format(v) end
  return ("%.3g"):format(v)
end
local md = { ("# gpu-check on %s%s"):format(cfg.on, cfg.quick ~= 0 and " (--quick)" or ""), "" }
for _, line in ipairs(env) do md[#md + 1] = "    " .. line end
md[#md + 1] = ""
md[#md + 1] = "| step | status | seconds | log |"
md[#md + 1] = "|---|---|---|---|"
for _, s in ipairs(steps) do
  local status = s.rc == "0" and "ok" or s.rc == "skipped" and "skipped" or ("FAILED (exit %s)"):format(s.rc)
  md[#md + 1] = ("| %s | %s | %s | %s |"):format(s.name, status, num(s.seconds), s.log)
end
md[#md + 1] = ""
md[#md + 1] = "| bench | figure | value | unit | baseline (same run) | baseline value | ratio |"
md[#md + 1] = "|---|---|---|---|---|---|---|"
for _, r in ipairs(figures) do
  md[#md + 1] = ("| %s | %s | %s | %s | %s | %s | %s |"):format(r.bench, r.figure, num(r.value), r.unit,
    r.baseline or "", num(r.baseline_value), r.ratio and ("%.2fx"):format(r.ratio) or "")
end
local mf = assert(io.open(cfg.out .. "/report.md", "w"))
mf:write(table.concat(md, "\n"), "\n")
mf:close()
print(table.concat(md, "\n"))

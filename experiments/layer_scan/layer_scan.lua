-- experiments/layer_scan/layer_scan.lua: *Is One Layer Enough?* layer-contribution scan: child
-- runs `base` (S_base), `full` (every parameter trained: S_full) and each block trained alone;
-- C_l = (S_l − S_base) / (S_full − S_base) as layer_metrics `contribution`, the Table-7 summary
-- and Figures 2, 8, 9 (analysis.lua; `ltrun sql @layer_scan`). --task: lt.scan.task (math, code,
-- agent, antonyms); the trainings are worker processes (lt.scan.workers: --workers, --devices,
-- --resume, --shard; after `ltrun db merge`, --analyze=true does the rest). README.md says more.
local study = require "lt.study"
local scan = require "lt.scan.workers"
local scan_task = require "lt.scan.task"
local ls = require "lt.scan.contributions"
local analysis = require "experiments.layer_scan.analysis"

return study.study{
  name = "layer_scan",
  help = "layer contributions C_l: each block trained alone against all of them",
  args = study.merge_args(scan_task.args, scan.args, {
    layers = { "all", "blocks to scan, each alone: all, 0,3,5, 10-15, -1", layers = true },
    sc = { 8, "GRPO: self-consistency samples of the full model per item (0: off)", int = true,
           min = 0 },
    sc_temperature = { 0.7, "their temperature", min = 0 },
    analyze = { false, "only the analysis, from the store (after merging shards)" },
    layer_lr = { 0, "learning rate of the single-block jobs (0: --lr; S_full reused across values)",
                 min = 0 },
    min_gap = { 0.02, "C is undefined when |S_full − S_base| is below this", min = 0 },
    top_k = { 3, "layers in the summary's top-k, the Jaccard of newly solved items and a vote "
                 .. "(besides top-3, top-5)", int = true, min = 1 },
    checkpoint_every = { 0, "each job checkpoints every N steps (0: off)", int = true, min = 0 },
    checkpoint_dir = { "", "the jobs' checkpoint folder (\"\": WORK/ckpt when checkpointing)" } }),
  -- the paper's Tables 8-11, each value with its source (printed when chosen)
  presets = require("experiments.layer_scan.presets").presets,
  run = function(cfg)
    -- the task's model (made when missing), data, bench, lr, micro_batch, bench_limit
    scan_task.defaults(cfg)
    if (cfg.checkpoint_every > 0 or cfg.checkpoint_dir ~= "") and cfg.eval_every > 0 then
      error("--eval_every with --checkpoint_every / --checkpoint_dir: not supported together (the "
            .. "scores of the evaluations before a resume would be lost); leave one of them off", 0)
    end
    local task = scan_task.new(cfg)
    if cfg.lr_sweep ~= "" and cfg.job == "" then
      cfg.lr = analysis.choose_lr(cfg, not cfg.analyze)
    end
    local key = cfg.scan_key ~= "" and cfg.scan_key or ls.scan_key(cfg)
    for _, k in ipairs{ "task", "algo", "model", "data", "bench", "bench_limit", "lr",
                        "micro_batch", "work" } do lt.run.param(k, cfg[k]) end
    if cfg.job ~= "" then return task.run_job(cfg.job, key) end
    lt.run.param("scan_key", key)
    local n_layers = lt.model.info(cfg.model).n_layers
    local layers = lt.layers.parse(n_layers, cfg.layers, "--layers")
    local jobs = { "base", "full" }
    for _, l in ipairs(layers) do jobs[#jobs + 1] = scan.job{ kind = "layer", layer = l } end
    if not cfg.analyze then
      task.trainer()        -- an unknown or unavailable --algo fails here, not in every worker
      task.training_data()  -- made once, before the workers read it
      local log_dir = cfg.work .. "/logs/" .. lt.run.id()
      scan.check(scan.launch(cfg, (analysis.reuse_full(cfg, key, jobs)), key, log_dir,
                             { ("--lr=%.17g"):format(cfg.lr) }))  -- the swept lr, when swept
    end
    analysis.analyze(cfg, key, jobs, layers, n_layers,
                     cfg.top_k > 5 and { 3, 5, cfg.top_k } or { 3, 5 })
  end }

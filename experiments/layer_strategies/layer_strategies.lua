-- experiments/layer_strategies/layer_strategies.lua: what a layer ranking is good for (*Is One
-- Layer Enough?* §4, Figure 7). Takes the ranking of a finished layer scan from the store
-- (--scan=RUN, default the latest) and trains, with the scan's model, task and hyper-parameters,
-- child runs in worker processes like the scan: full (the baseline), boost_best / boost_worst (the
-- best / worst k blocks at lr × factor), only_best / only_worst, middle (the k middle blocks),
-- each scored --repeats times (mean ± sample std); Figure 7 as an SVG artifact (README.md).
local study = require "lt.study"
local scan = require "lt.scan.workers"
local scan_task = require "lt.scan.task"
local ls = require "lt.scan.contributions"
local charts = require "lt.scan.charts"
local strategies = require "experiments.layer_strategies.strategies"

return study.study{
  name = "layer_strategies",
  help = "boost, train only or freeze the best / worst layers of a scan's ranking",
  args = { scan = { 0, "the layer scan run (0: the latest)", int = true, min = 0 },
           k = { 3, "blocks", int = true, min = 1 },
           factor = { 3, "learning-rate factor of the boosted blocks", min = 0 },
           repeats = { 3, "evaluations of each strategy", int = true, min = 1 },
           workers = scan.args.workers, devices = scan.args.devices, job = scan.args.job,
           scan_key = scan.args.scan_key,
           out = { "", "figure folder (\"\": the scan's WORK/figures)" } },
  run = function(cfg)
    local task_cfg, rank, scan_run = ls.stored_scan(cfg.scan)
    local task = scan_task.new(task_cfg)
    local k = math.min(cfg.k, #rank)
    local best, worst = {}, {}
    for i = 1, k do best[i], worst[i] = rank[i], rank[#rank - k + i] end
    if cfg.job ~= "" then
      lt.run.param{ scan = scan_run, strategy = cfg.job, best = table.concat(best, ","),
                    worst = table.concat(worst, ",") }
      local base = lt.model.load(task_cfg.model)
      local m = base:clone()
      task.train_and_score(m, strategies.strategy(m, cfg.job, best, worst, cfg.factor))
      for r = 1, cfg.repeats do lt.run.log("score_repeat", task.score(m, r), { step = r - 1 }) end
      return m:free()
    end
    task.trainer()
    task.training_data()
    local key = ("layer_strategies:%d:%s"):format(scan_run, scan.hash(
      ("k=%d;factor=%g;repeats=%d;seed=%.0f"):format(k, cfg.factor, cfg.repeats, lt.run.seed())))
    local log_dir = task_cfg.work .. "/logs/" .. lt.run.id()
    local res = scan.launch({ workers = cfg.workers, devices = cfg.devices }, strategies.strategies,
                            key, log_dir, { "--scan=" .. scan_run })
    print(("scan run %d: best %s, worst %s (k = %d), boost factor %g, %d evaluations each"):format(
      scan_run, table.concat(best, ","), table.concat(worst, ","), k, cfg.factor, cfg.repeats))
    print(("%-12s %8s %8s"):format("strategy", "mean", "std"))
    local s = strategies.strategy_scores(res)
    local out = cfg.out ~= "" and cfg.out or (task_cfg.work .. "/figures")
    lt.fs.mkdir(out)
    lt.run.artifact(charts.bars(("%s/layer_strategies_%d.svg"):format(out, lt.run.id()), {
      title = ("Layer strategies (k = %d, boost × %g), mean ± std of %d evaluations"):format(
        k, cfg.factor, cfg.repeats),
      y_title = "score", groups = s.groups,
      series = { { name = "score", values = s.means, errors = s.stds } },
      ref = s.full and { value = s.full, label = "full" } or nil }), { kind = "figure7" })
    -- a crashed or failed strategy fails this run (exit code 1), after the others are shown
    scan.check(res)
  end }

-- experiments/layer_lr/layer_lr.lua: *Is One Layer Enough?* A.7, Table 12: is the ranking an
-- artifact of the learning rate? Takes a finished layer scan (--scan=RUN, default the latest),
-- retrains its top-k and bottom-k blocks (k = 5, as Table 12) each alone at a higher rate (--lr, or
-- the blocks' rate of the scan x --factor; the paper's two rates are blank in its text) with the
-- scan's model, task, data, steps and seed, as child runs in worker processes like the scan, and
-- prints Table 12: each block's C at the scan's rate and at the higher one, both on the scan's
-- S_base and S_full (lr_table.lua). Logs layer_metrics contribution_boosted.
local study = require "lt.study"
local scan = require "lt.scan.workers"
local scan_task = require "lt.scan.task"
local ls = require "lt.scan.contributions"
local lr_table = require "experiments.layer_lr.lr_table"

return study.study{
  name = "layer_lr",
  help = "Table 12: the top and bottom blocks of a scan retrained at a higher learning rate",
  args = { scan = { 0, "the layer scan run (0: the latest)", int = true, min = 0 },
           k = { 5, "blocks at each end of the ranking", int = true, min = 1 },
           lr = { 0, "the higher learning rate (0: the scan's block rate x --factor)", min = 0 },
           factor = { 3, "the higher rate over the scan's (A.7's two rates are blank in the "
                         .. "paper's text)", min = 0 },
           workers = scan.args.workers, devices = scan.args.devices, job = scan.args.job,
           scan_key = scan.args.scan_key },
  run = function(cfg)
    local task_cfg, rank, scan_run = ls.stored_scan(cfg.scan)
    local base_lr = lr_table.block_lr(scan_run, task_cfg)
    local lr = cfg.lr > 0 and cfg.lr or base_lr * cfg.factor
    local top, bottom = lr_table.ends(rank, cfg.k)
    local task = scan_task.new(task_cfg)
    if cfg.job ~= "" then
      local l = scan.job_of(cfg.job).layer
                or error(("--job=%s: expected layer_<l>"):format(cfg.job), 0)
      lt.run.param{ scan = scan_run, scan_key = cfg.scan_key, trainable = "block " .. l,
                    job_lr = lr }
      local m = lt.model.load(task_cfg.model):clone()
      m:train_only(l)
      return task.train_and_score(m, { lr = lr })
    end
    task.trainer()
    task.training_data()
    local key = ("layer_lr:%d:%s"):format(scan_run, scan.hash(("lr=%.17g"):format(lr)))
    local jobs = {}
    for _, l in ipairs(top) do jobs[#jobs + 1] = scan.job{ kind = "layer", layer = l } end
    for _, l in ipairs(bottom) do jobs[#jobs + 1] = scan.job{ kind = "layer", layer = l } end
    lt.run.param{ scan = scan_run, lr_default = base_lr, lr_boosted = lr, scan_key = key }
    -- the scan's seed: the same data order and samples as its own jobs
    local seed = lt.run.query("SELECT seed FROM runs WHERE id = ?", scan_run)[1].seed
    local log_dir = task_cfg.work .. "/logs/" .. lt.run.id()
    local res = scan.launch({ workers = cfg.workers, devices = cfg.devices, seed = seed }, jobs,
                            key, log_dir, { "--scan=" .. scan_run })
    scan.check(res)
    lr_table.lr_table(scan_run, key, top, bottom, base_lr, lr)
  end }

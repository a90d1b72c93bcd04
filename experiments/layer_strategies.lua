-- experiments/layer_strategies.lua: what a layer ranking is good for (*Is One Layer
-- Enough?* §4, Figure 7). Takes the ranking of a finished layer scan from the store
-- (--scan=RUN, default the latest) and trains, with the scan's model, task and
-- hyper-parameters, as child runs:
--   full        every block at the base learning rate (the baseline)
--   boost_best  every block, the best k blocks at lr × factor (Boost B_k)
--   boost_worst every block, the worst k at lr × factor          (Boost W_k)
--   only_best   only the best k blocks                           (Only B_k)
--   only_worst  only the worst k blocks                          (Only W_k)
--   middle      only the k middle blocks (lt.layers.middle)       (Middle-k)
-- each scored --repeats times on differently drawn benchmark samples (mean ± sample std),
-- as worker processes like the scan (--workers, --devices). Figure 7 as an SVG artifact.
--   ltrun experiments/layer_strategies.lua [--scan=RUN] [--k=3] [--factor=3] [--repeats=3]
local exp = require "lt.experiment"
local args = require "lt.args"
local scan = require "lt.scan"
local ls = require "lt.layer_scan"
local charts = require "lt.scan_charts"

local cfg = exp.args{ scan = 0, k = 3, factor = 3, repeats = 3, workers = 2, devices = "", job = "", out = "" }
local strategies = { "full", "boost_best", "boost_worst", "only_best", "only_worst", "middle" }

-- the scan run: its ranking and the configuration its jobs trained with
local scan_run = cfg.scan
if scan_run == 0 then
  local r = lt.run.query("SELECT max(run_id) AS id FROM params WHERE key = 'ranking'")[1]
  scan_run = r and r.id
  if not scan_run then error("no finished layer scan in the store (a run with param `ranking`); pass --scan=RUN", 0) end
end
local sp = {}
for _, r in ipairs(lt.run.query("SELECT key, value FROM params WHERE run_id = ?", scan_run)) do sp[r.key] = args.coerce(r.value) end
if not sp.ranking then error(("run %d has no param `ranking`: not a finished layer scan"):format(scan_run), 0) end
local task_cfg = {}
for _, k in ipairs{ "model", "algo", "data", "bench", "bench_limit", "steps", "lr", "warmup", "seq_len", "micro_batch",
                    "eval_every", "work" } do
  if sp[k] == nil then error(("scan run %d lacks param `%s`"):format(scan_run, k), 0) end
  task_cfg[k] = sp[k]
end
-- GRPO scans (score_samples / score_temperature: S from sampled answers, as the scan scored)
for _, k in ipairs{ "prompts", "group_size", "max_response", "score_samples", "score_temperature" } do task_cfg[k] = sp[k] end
task_cfg.work = (task_cfg.work ~= "" and task_cfg.work) or (task_cfg.model .. ".layer_scan")
task_cfg.bench, task_cfg.model = tostring(task_cfg.bench), tostring(task_cfg.model)
local task = require("lt.scan_task").new(task_cfg)
local rank = {}
for l in tostring(sp.ranking):gmatch("%d+") do rank[#rank + 1] = tonumber(l) end
local k = math.min(cfg.k, #rank)
local best, worst = {}, {}
for i = 1, k do best[i], worst[i] = rank[i], rank[#rank - k + i] end

-- ---- one strategy, in a worker process ----------------------------------------------------
local function run_job(name)
  lt.run.param{ scan = scan_run, strategy = name, best = table.concat(best, ","), worst = table.concat(worst, ",") }
  local base = lt.model.load(task_cfg.model)
  local m = base:clone()
  local o = {}
  if name == "full" or name == "boost_best" or name == "boost_worst" then m:train_only("all") end
  if name == "boost_best" or name == "boost_worst" then
    o.lr_mult = {}
    for _, l in ipairs(name == "boost_best" and best or worst) do o.lr_mult[l] = cfg.factor end
  elseif name == "only_best" then m:train_only(best)
  elseif name == "only_worst" then m:train_only(worst)
  elseif name == "middle" then m:train_only(lt.layers.middle(m, k))
  elseif name ~= "full" then error(("--job=%s: expected one of %s"):format(name, table.concat(strategies, ", ")), 0) end
  task.train_and_score(m, o)
  for r = 1, cfg.repeats do lt.run.log("score_repeat", task.score(m, r), { step = r - 1 }) end
  m:free()
end
if cfg.job ~= "" then
  run_job(cfg.job)
  return
end

-- ---- all strategies --------------------------------------------------------------------------
task.trainer()
task.training_data()
local key = ("layer_strategies:%d:%s"):format(scan_run, scan.hash(("k=%d;factor=%g;repeats=%d"):format(k, cfg.factor, cfg.repeats)))
local res = scan.run{ jobs = strategies, workers = cfg.workers, devices = cfg.devices, key = key,
                      log_dir = task_cfg.work .. "/logs/" .. lt.run.id(),
                      argv = function(job)
                        return { arg[0], "--job=" .. job, "--scan=" .. scan_run, "--k=" .. cfg.k,
                                 "--factor=" .. cfg.factor, "--repeats=" .. cfg.repeats }
                      end }
print("strategies: " .. scan.report(res))

local groups, means, stds = {}, {}, {}
print(("scan run %d: best %s, worst %s (k = %d), boost factor %g, %d evaluations each"):format(
  scan_run, table.concat(best, ","), table.concat(worst, ","), k, cfg.factor, cfg.repeats))
print(("%-12s %8s %8s"):format("strategy", "mean", "std"))
for _, r in ipairs(res.results) do
  if r.status == "ok" then
    local xs = {}
    for _, row in ipairs(lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'score_repeat' ORDER BY step", r.run)) do
      xs[#xs + 1] = row.value
    end
    local m, s = ls.mean_std(xs)
    groups[#groups + 1], means[#means + 1], stds[#stds + 1] = r.job, m, s
    lt.run.log{ ["strategy/" .. r.job .. "/mean"] = m, ["strategy/" .. r.job .. "/std"] = s }
    print(("%-12s %8.4f %8.4f"):format(r.job, m, s))
  end
end
local out = cfg.out ~= "" and cfg.out or (task_cfg.work .. "/figures")
scan.mkdir(out)
local full_mean
for i, gname in ipairs(groups) do if gname == "full" then full_mean = means[i] end end
lt.run.artifact(charts.bars(("%s/layer_strategies_%d.svg"):format(out, lt.run.id()), {
  title = ("Layer strategies (k = %d, boost × %g), mean ± std of %d evaluations"):format(k, cfg.factor, cfg.repeats),
  y_title = "score", groups = groups, series = { { name = "score", values = means, errors = stds } },
  ref = full_mean and { value = full_mean, label = "full" } or nil }), { kind = "figure7" })
scan.check(res)  -- a crashed or failed strategy fails this run (exit code 1), after the others are shown

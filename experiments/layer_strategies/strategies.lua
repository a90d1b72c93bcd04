-- experiments/layer_strategies/strategies.lua: the six training strategies of the layer-strategies
-- study (full, boost_best, boost_worst, only_best, only_worst, middle) and their repeated scores.
local ls = require "lt.scan.contributions"
local M = {}

M.strategies = { "full", "boost_best", "boost_worst", "only_best", "only_worst", "middle" }

-- Sets m up for a strategy with the best / worst k blocks: boost_* train every block with the
-- k blocks' learning rate × factor (→ the lr_mult option), only_* train the k blocks alone,
-- middle the k middle blocks (lt.layers.middle), full every block. → training options
function M.strategy(m, name, best, worst, factor)
  local o = {}
  if name == "full" or name == "boost_best" or name == "boost_worst" then m:train_only("all") end
  if name == "boost_best" or name == "boost_worst" then
    o.lr_mult = {}
    for _, l in ipairs(name == "boost_best" and best or worst) do o.lr_mult[l] = factor end
  elseif name == "only_best" then m:train_only(best)
  elseif name == "only_worst" then m:train_only(worst)
  elseif name == "middle" then m:train_only(lt.layers.middle(m, #best))
  elseif name ~= "full" then error(("--job=%s: expected one of %s"):format(name, table.concat(M.strategies, ", ")), 0) end
  return o
end

-- each ok strategy's repeated scores, mean ± sample std (logged as strategy/NAME/mean, std)
function M.strategy_scores(res)
  local out = { groups = {}, means = {}, stds = {} }
  for _, r in ipairs(res.results) do
    if r.status == "ok" then
      local xs = {}
      for _, row in ipairs(lt.run.query("@metric_values", r.run, "score_repeat")) do xs[#xs + 1] = row.value end
      local m, s = ls.mean_std(xs)
      out.groups[#out.groups + 1], out.means[#out.means + 1], out.stds[#out.stds + 1] = r.job, m, s
      lt.run.log{ ["strategy/" .. r.job .. "/mean"] = m, ["strategy/" .. r.job .. "/std"] = s }
      print(("%-12s %8.4f %8.4f"):format(r.job, m, s))
      if r.job == "full" then out.full = m end
    end
  end
  return out
end

return M

-- experiments/layer_lr/lr_table.lua: the learning-rate ablation's Table 12 (*Is One Layer Enough?*
-- A.7): the rate a finished scan trained its blocks at, its top and bottom layers, and C of each
-- at the scan's rate and at the new one.
local ls = require "lt.scan.contributions"
local M = {}

-- the rate a finished scan trained its blocks at: its --layer_lr when given, else its --lr
function M.block_lr(run, task_cfg)
  local r = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'layer_lr'", run)[1]
  local v = r and tonumber(r.value) or 0
  return v > 0 and v or task_cfg.lr
end

-- the top k and the bottom k layers of a ranking (best first), k at most half of it
function M.ends(rank, k)
  k = math.min(k, math.floor(#rank / 2))
  if k < 1 then error(("the scan ranks %d layer(s): Table 12 needs two at least"):format(#rank), 0) end
  local top, bottom = {}, {}
  for i = 1, k do top[i], bottom[i] = rank[i], rank[#rank - k + i] end
  return top, bottom
end

-- S_base and S_full of a finished scan run: its base child, and its full child or the full run
-- it reused (param full_run)
function M.scan_base_full(run)
  local function score_of(sql, ...)
    local r = lt.run.query(sql, ...)[1]
    return r and r.value
  end
  local q = [[SELECT m.value FROM runs r JOIN metrics m ON m.run_id = r.id AND m.name = 'score'
               WHERE r.parent_id = ? AND r.name = ? AND r.status = 'ok' ORDER BY r.id DESC, m.step DESC LIMIT 1]]
  local b, f = score_of(q, run, "base"), score_of(q, run, "full")
  if not f then
    f = score_of([[SELECT m.value FROM params p JOIN metrics m ON m.run_id = CAST(p.value AS INTEGER) AND m.name = 'score'
                   WHERE p.run_id = ? AND p.key = 'full_run' ORDER BY m.step DESC LIMIT 1]], run)
  end
  if not (b and f) then error(("scan run %d: no ok base and full runs with a score"):format(run), 0) end
  return b, f
end

-- Table 12: for each of the top and bottom layers, C at the scan's rate (its stored
-- contribution) and at `lr` (the runs of the retraining with scan key `key`, on the scan's
-- S_base and S_full). Prints it, logs layer_metrics contribution_boosted (grp top / bottom).
-- → {{group, layer, c, c_boosted}, ...}
function M.lr_table(scan_run, key, top, bottom, base_lr, lr)
  local c = ls.stored_contributions(scan_run)
  local b, f = M.scan_base_full(scan_run)
  local boosted = {}
  for _, r in ipairs(lt.run.query("@scan_scores", key)) do
    local l = require("lt.scan.workers").job_of(r.name).layer
    if l then boosted[l] = r.value end  -- the latest ok run of each block
  end
  local cb = ls.contributions(boosted, b, f) or {}
  local rows = {}
  print(("Table 12 (scan run %d; S_base %.4f, S_full %.4f)"):format(scan_run, b, f))
  print(("%-10s %-8s %14s %14s"):format("group", "layer", ("C (lr=%g)"):format(base_lr), ("C (lr=%g)"):format(lr)))
  for _, g in ipairs{ { "top", top }, { "bottom", bottom } } do
    for _, l in ipairs(g[2]) do
      if cb[l] == nil then error(("layer %d: no ok run of its retraining (scan key %s)"):format(l, key), 0) end
      rows[#rows + 1] = { group = g[1], layer = l, c = c[l], c_boosted = cb[l] }
      lt.run.log_layers("contribution_boosted", { cb[l] }, { first = l, grp = g[1] })
      print(("%-10s %-8d %14.3f %14.3f"):format(g[1] .. "-" .. #g[2], l, c[l], cb[l]))
    end
  end
  return rows
end

return M

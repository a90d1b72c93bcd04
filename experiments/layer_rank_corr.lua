-- experiments/layer_rank_corr.lua: do two layer scans rank the blocks alike? (*Is One Layer
-- Enough?*, Figure 3: scans on other datasets, tasks or algorithms.) Reads the contributions
-- C_l of two or more scan runs from the store (experiments/layer_scan.lua, layer_metrics
-- `contribution`, grp ""), and for each pair logs Spearman's rho of the rankings and Pearson's
-- r of C, with two-sided p-values (lt.stats), over the blocks both scanned; one scatter plot
-- per pair (C in the first scan against C in the second, a point per block) as an artifact.
--   ltrun experiments/layer_rank_corr.lua --scans=12,40[,77]   (default: the latest two)
local exp = require "lt.experiment"
local scan = require "lt.scan"
local charts = require "lt.scan_charts"
local cfg = exp.args{ scans = "", out = "figures" }

local ids = {}
if cfg.scans ~= "" then
  for id in tostring(cfg.scans):gmatch("[^,]+") do
    local n = tonumber(id)
    if not n then error(("--scans=%s: expected run ids like 12,40"):format(cfg.scans), 0) end
    ids[#ids + 1] = n
  end
else
  for _, r in ipairs(lt.run.query("SELECT DISTINCT run_id FROM layer_metrics WHERE name = 'contribution' AND grp = '' "
                                  .. "ORDER BY run_id DESC LIMIT 2")) do
    table.insert(ids, 1, r.run_id)
  end
end
if #ids < 2 then error(("need two scans with contributions (--scans=A,B); found %d in the store"):format(#ids), 0) end

local function contributions(run)
  local c, n = {}, 0
  for _, r in ipairs(lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'contribution' "
                                  .. "AND grp = '' ORDER BY layer", run)) do
    c[r.layer], n = r.value, n + 1
  end
  if n == 0 then error(("run %d has no contributions (layer_metrics `contribution`): not a finished layer scan"):format(run), 0) end
  return c
end
local function describe(run)
  local p = {}
  for _, r in ipairs(lt.run.query("SELECT key, value FROM params WHERE run_id = ? AND key IN ('model', 'algo', 'bench', 'data')", run)) do
    p[#p + 1] = r.key .. "=" .. r.value
  end
  return ("run %d (%s)"):format(run, table.concat(p, " "))
end

scan.mkdir(cfg.out)
print(("%-6s %-6s %6s %8s %10s %8s %10s"):format("scan A", "scan B", "blocks", "spearman", "p", "pearson", "p"))
for i = 1, #ids do
  for j = i + 1, #ids do
    local a, b = contributions(ids[i]), contributions(ids[j])
    local xa, xb, pts = {}, {}, {}
    for l, v in pairs(a) do
      if b[l] then
        xa[#xa + 1], xb[#xb + 1] = v, b[l]
        pts[#pts + 1] = { x = v, y = b[l], label = tostring(l) }
      end
    end
    if #xa < 3 then error(("runs %d and %d share %d scanned blocks; a correlation needs at least 3"):format(ids[i], ids[j], #xa), 0) end
    local rho, p_rho = lt.stats.spearman(xa, xb)
    local r, p_r = lt.stats.pearson(xa, xb)
    local tag = ("%d_%d"):format(ids[i], ids[j])
    lt.run.log{ ["spearman/" .. tag] = rho, ["spearman_p/" .. tag] = p_rho, ["pearson/" .. tag] = r, ["pearson_p/" .. tag] = p_r }
    print(("%-6d %-6d %6d %8.3f %10.3g %8.3f %10.3g"):format(ids[i], ids[j], #xa, rho, p_rho, r, p_r))
    if rho ~= rho then print("  undefined: the contributions of one of the scans are all equal") end
    local path = ("%s/layer_rank_corr_%d_%s.svg"):format(cfg.out, lt.run.id(), tag)
    lt.run.artifact(charts.scatter(path, {
      title = ("Contributions: Spearman rho = %.2f (p = %.2g)"):format(rho, p_rho),
      x_title = "C_l, " .. describe(ids[i]), y_title = "C_l, " .. describe(ids[j]), points = pts, fit = true }),
      { kind = "figure3" })
  end
end

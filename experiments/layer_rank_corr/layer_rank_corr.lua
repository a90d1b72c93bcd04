-- experiments/layer_rank_corr/layer_rank_corr.lua: do two layer scans rank the blocks alike? (*Is
-- One Layer Enough?*, Figure 3: scans on other datasets, tasks or algorithms.) Reads the
-- contributions C_l of two or more layer_scan runs from the store and for each pair logs
-- Spearman's rho of the rankings and Pearson's r of C, with two-sided p-values (lt.stats), over
-- the blocks both scanned; a scatter plot per pair (a point per block) as an artifact.
local study = require "lt.study"
local ls = require "lt.scan.contributions"
local charts = require "lt.scan.charts"

return study.study{
  name = "layer_rank_corr",
  help = "rank correlation of the layer contributions of two or more scans",
  args = { scans = { "", "scan run ids, comma-separated (\"\": the latest two)" },
           out = { "figures", "folder for the scatter plots" } },
  run = function(cfg)
    local ids = {}
    for _, id in ipairs(study.list(cfg.scans)) do
      ids[#ids + 1] = tonumber(id)
                      or error(("--scans=%s: expected run ids like 12,40"):format(cfg.scans), 0)
    end
    if #ids == 0 then ids = ls.latest_scans(2) end
    if #ids < 2 then
      error(("need two scans with contributions (--scans=A,B); found %d in the store"):format(#ids),
            0)
    end
    lt.fs.mkdir(cfg.out)
    print(("%-6s %-6s %6s %8s %10s %8s %10s"):format("scan A", "scan B", "blocks", "spearman", "p",
                                                     "pearson", "p"))
    for i = 1, #ids do
      for j = i + 1, #ids do
        local a, b = ls.stored_contributions(ids[i]), ls.stored_contributions(ids[j])
        local xa, xb, pts = {}, {}, {}
        for l, v in study.sorted(a) do
          if b[l] then
            xa[#xa + 1], xb[#xb + 1] = v, b[l]
            pts[#pts + 1] = { x = v, y = b[l], label = tostring(l) }
          end
        end
        if #xa < 3 then
          error(("runs %d and %d share %d scanned blocks; a correlation needs at least 3"):format(
            ids[i], ids[j], #xa), 0)
        end
        local rho, p_rho = lt.stats.spearman(xa, xb)
        local r, p_r = lt.stats.pearson(xa, xb)
        local tag = ("%d_%d"):format(ids[i], ids[j])
        lt.run.log{ ["spearman/" .. tag] = rho, ["spearman_p/" .. tag] = p_rho,
                    ["pearson/" .. tag] = r, ["pearson_p/" .. tag] = p_r }
        print(("%-6d %-6d %6d %8.3f %10.3g %8.3f %10.3g"):format(ids[i], ids[j], #xa, rho, p_rho, r,
                                                                 p_r))
        if rho ~= rho then
          print("  undefined: the contributions of one of the scans are all equal")
        end
        local path = ("%s/layer_rank_corr_%d_%s.svg"):format(cfg.out, lt.run.id(), tag)
        lt.run.artifact(charts.scatter(path, {
          title = ("Contributions: Spearman rho = %.2f (p = %.2g)"):format(rho, p_rho),
          x_title = "C_l, " .. ls.describe(ids[i]), y_title = "C_l, " .. ls.describe(ids[j]),
          points = pts, fit = true }), { kind = "figure3" })
      end
    end
  end }

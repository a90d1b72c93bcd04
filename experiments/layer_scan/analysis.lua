-- experiments/layer_scan/analysis.lua: the layer-scan study's own steps: the learning-rate sweep
-- of the full job, S_full reused across --layer_lr, and the analysis of a finished scan (S and C_l
-- per block, the Table-7 summary, Figures 2, 8 and 9, the ensembles of §5.1).
local workers = require "lt.scan.workers"
local task = require "lt.scan.task"
local ls = require "lt.scan.contributions"
local charts = require "lt.scan.charts"
local svg = require "lt.report.svg"
local M = {}

-- --lr_sweep (§3.1, A.2: the full-parameter baseline's rate tuned by its best reported result):
-- the full job at each rate (jobs sweep_<i>, in the scan's workers; launch = false: only read
-- back, for --analyze), each scored as the scan scores (S on --bench, with --eval_every its best
-- checkpoint); the best (ties: the first in the list) is the scan's --lr. Logs lr_sweep/<rate>
-- and param lr_chosen; → the chosen rate
function M.choose_lr(cfg, launch)
  local lrs = task.sweep_lrs(cfg)
  if (cfg.shard or "") ~= "" or os.getenv("SLURM_ARRAY_TASK_COUNT") then
    error("--lr_sweep in a shard: a shard would run only some of the rates; sweep unsharded, then give the "
          .. "shards the chosen rate as --lr", 0)
  end
  local key, jobs = ls.scan_key(cfg, false, true), {}
  for i = 1, #lrs do jobs[i] = workers.job{ kind = "sweep", sweep = i } end
  if launch then workers.check(workers.launch(cfg, jobs, key, cfg.work .. "/logs/" .. lt.run.id() .. "_sweep")) end
  local got = {}
  for _, r in ipairs(lt.run.query("@scan_scores", key)) do
    local i = workers.job_of(r.name).sweep
    if i then got[i] = r.value end  -- the latest ok run of each rate
  end
  local best
  print(("learning-rate sweep of the full job, by its reported score S (%s):"):format(cfg.bench))
  for i, lr in ipairs(lrs) do
    if not got[i] then error(("--lr_sweep: no ok run of sweep_%d (lr %g) in the store; run the scan again"):format(i, lr), 0) end
    print(("  lr %-10g S %.4f"):format(lr, got[i]))
    lt.run.log("lr_sweep/" .. ("%g"):format(lr), got[i])
    if not best or got[i] > got[best] then best = i end
  end
  print(("chosen: lr %g (the blocks train at %s)"):format(lrs[best], (cfg.layer_lr or 0) > 0 and ("--layer_lr=" .. cfg.layer_lr) or "it too"))
  lt.run.param("lr_chosen", lrs[best])
  return lrs[best]
end

-- S_full once per full-training setting: with --layer_lr (the blocks trained at their own
-- learning rate) a scan whose full job already ran ok at these settings (model, data,
-- algorithm, lr, steps, seed and the rest of scan_key; param full_key) reuses that run
-- instead of training it again, so C's normaliser stays the same run across --layer_lr
-- values. → the jobs to launch ("full" dropped when reused) and the full_key
function M.reuse_full(cfg, key, jobs)
  local fk = ls.scan_key(cfg, true)
  if fk == key then return jobs, fk end
  local r = lt.run.query([[SELECT max(r.id) AS id FROM runs r JOIN params p ON p.run_id = r.id AND p.key = 'full_key'
                            WHERE p.value = ? AND r.name = 'full' AND r.status = 'ok']], fk)[1]
  if not (r and r.id) then return jobs, fk end
  print(("S_full: run %d (the full job at --lr=%g with these settings), not trained again"):format(r.id, cfg.lr))
  lt.run.param("full_run", r.id)
  local out = {}
  for _, j in ipairs(jobs) do if j ~= "full" then out[#out + 1] = j end end
  return out, fk
end

-- §5.2 weight change: per block ||trained − base||, the full run against each block alone
-- (Figure 9, an artifact at FIG_weight_change.svg); g: ls.gather's
function M.weight_change_figure(fig, g, layers)
  local function wc(run)
    local out = {}
    for _, r in ipairs(lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'weight_change'", run)) do
      out[r.layer] = r.value
    end
    return out
  end
  local full_wc, alone, x = wc(g.full.run), {}, {}
  local full_v = {}
  for i, l in ipairs(layers) do
    x[i] = tostring(l)
    full_v[i] = full_wc[l] or 0
    alone[i] = wc(g.layers[l].run)[l] or 0
  end
  lt.run.artifact(svg.profile(fig .. "_weight_change.svg", {
    title = "Weight change ||W_trained − W_base|| per block", x = x, x_title = "layer",
    series = { { name = "full", values = full_v }, { name = "block alone", values = alone } } }), { kind = "figure9" })
end

-- The analysis of a finished scan, from the store (all shards merged, resumed scans
-- included): S and C_l per block (layer_metrics score, contribution; per benchmark too), the
-- Table-7 summary and ranking (params), Figure 2 (C_l), the ensembles of §5.1 (majority votes
-- of the top-k layer models for k in `ensembles`, self-consistency; Figure 8), the pairwise
-- Jaccard of the problems the top-k layer models newly solve, the weight change of §5.2
-- (Figure 9). Returns nothing when a job has no ok run yet or C is undefined (said why).
function M.analyze(cfg, key, jobs, layers, n_layers, ensembles)
  local g = ls.gather(key, jobs, ls.scan_key(cfg, true))
  if #g.missing > 0 then
    print(("scan %s: no ok run yet for %s; contributions need all of them (run again with --resume=true, "
           .. "or merge the shards' DBs with `ltrun db merge` and run with --analyze=true)"):format(key, table.concat(g.missing, ", ")))
    return
  end
  local scores = {}
  for _, l in ipairs(layers) do scores[l] = g.layers[l].score end
  print(("S_base = %.4f, S_full = %.4f (in-domain: the mean of the %s benchmarks of %s)"):format(g.base.score,
        g.full.score, task.in_domain[cfg.task] or "?", cfg.bench))
  local c, why = ls.contributions(scores, g.base.score, g.full.score, cfg.min_gap)
  for _, l in ipairs(layers) do lt.run.log_layers("score", { scores[l] }, { first = l }) end
  if not c then
    print("contribution: " .. why)
    lt.run.param("contribution", "undefined: " .. why)
    return
  end
  for _, l in ipairs(layers) do
    lt.run.log_layers("contribution", { c[l] }, { first = l })
    for bench, s in pairs(g.layers[l].by_bench) do
      local gap = g.full.by_bench[bench] - g.base.by_bench[bench]
      if math.abs(gap) >= cfg.min_gap then
        local cb = (s - g.base.by_bench[bench]) / gap
        lt.run.log_layers("contribution", { cb }, { first = l, grp = bench })
      end
    end
  end
  ls.overall_contribution(cfg, g, layers, c)

  print(("%-8s %8s %8s"):format("layer", "S_l", "C_l"))
  for _, l in ipairs(layers) do print(("%-8d %8.4f %8.3f"):format(l, scores[l], c[l])) end
  local k = math.min(cfg.top_k, #layers)
  local s = ls.summary(c, n_layers, k)
  local rank = ls.ranking(c)
  local top = {}
  for i = 1, k do top[i] = tostring(rank[i]) end
  print(("Table 7: best C = %.3f (layer %d), worst C = %.3f (layer %d), layers with C >= 1: %d of %d, "
         .. "top-%d layers %s, %d of them in the middle third"):format(s.best_c, s.best, s.worst_c, s.worst,
         s.n_ge_1, s.n, k, table.concat(top, ","), s.middle))
  local rank_s = {}
  for i, l in ipairs(rank) do rank_s[i] = tostring(l) end
  lt.run.param{ ranking = table.concat(rank_s, ","), best_layer = s.best, best_c = s.best_c, worst_layer = s.worst,
                worst_c = s.worst_c, n_c_ge_1 = s.n_ge_1, top_k_middle_share = s.middle_share }

  workers.mkdir(cfg.work .. "/figures")
  local fig = ("%s/figures/layer_scan_%d"):format(cfg.work, lt.run.id())
  local cs = {}
  for i, l in ipairs(layers) do cs[i] = c[l] end
  lt.run.artifact(charts.contribution(fig .. "_contribution.svg", {
    title = ("Layer contribution C_l (%s, %s)"):format(cfg.model:match("[^/]+$"), cfg.algo), layers = layers, c = cs }),
    { kind = "figure2" })

  if cfg.task == "code" or cfg.task == "agent" then  -- no answers per item in eval_items to vote on
    M.weight_change_figure(fig, g, layers)
    print(("figures: %s_{contribution,weight_change}.svg (no ensembles for the %s task); ltrun sql @layer_scan"):format(fig, cfg.task))
    return
  end
  -- §5.1 ensembles: majority vote of the top-k layer models against the best single layer
  -- model, the full model and the base, on the first benchmark's items (from eval_items)
  local bench_name, protocol, compare = task.bench_name(cfg.bench:match("^[^,]+"))
  local function acc_of(run)
    local r = lt.run.query("SELECT avg(correct) AS acc FROM eval_items WHERE run_id = ? AND bench = ? AND protocol = ? "
                           .. "AND item_id NOT LIKE '%#%'", run, bench_name, protocol)[1]
    return r and r.acc or 0
  end
  local groups, values = { "base", "full", ("best single (layer %d)"):format(rank[1]) },
                         { acc_of(g.base.run), acc_of(g.full.run), acc_of(g.layers[rank[1]].run) }
  for _, kk in ipairs(ensembles) do
    if kk <= #rank then
      local runs = {}
      for i = 1, kk do runs[i] = g.layers[rank[i]].run end
      local v = lt.eval.vote_runs{ runs = runs, bench = bench_name, protocol = protocol, compare = compare }
      groups[#groups + 1] = ("vote top-%d"):format(kk)
      values[#values + 1] = v.acc
      lt.run.log(("ensemble/vote_top%d"):format(kk), v.acc)
    end
  end
  lt.run.log{ ["ensemble/base"] = values[1], ["ensemble/full"] = values[2], ["ensemble/best_single"] = values[3] }
  -- self-consistency: the full model's k samples per item, majority vote (logged by its job)
  local sc = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'self_consistency'", g.full.run)[1]
  if sc then
    local k_sc = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'self_consistency_k'", g.full.run)[1]
    groups[#groups + 1] = ("self-consistency (full, k=%s)"):format(k_sc and k_sc.value or "?")
    values[#values + 1] = sc.value
    lt.run.log("ensemble/self_consistency", sc.value)
  end
  -- pairwise Jaccard of the problems the top-k layer models newly solve (relative to the base)
  local base_solved = lt.eval.solved(g.base.run, bench_name, protocol)
  local new, jac = {}, {}
  for i = 1, k do new[i] = lt.eval.newly_solved(base_solved, lt.eval.solved(g.layers[rank[i]].run, bench_name, protocol)) end
  for i = 1, k do
    for j = i + 1, k do
      local v = lt.stats.jaccard(new[i], new[j])
      jac[#jac + 1] = v
      lt.run.log(("jaccard/%d_%d"):format(rank[i], rank[j]), v)
    end
  end
  if #jac > 0 then
    local mj = ls.mean_std(jac)
    lt.run.log("jaccard/mean_top_k", mj)
    local extra = {}
    for i = 4, #groups do extra[#extra + 1] = (", %s %.3f"):format(groups[i], values[i]) end
    print(("ensembles on %s: base %.3f, full %.3f, best single %.3f%s; mean pairwise Jaccard of newly solved (top-%d) %.3f")
          :format(bench_name, values[1], values[2], values[3], table.concat(extra), k, mj))
  end
  lt.run.artifact(charts.bars(fig .. "_ensembles.svg", {
    title = "Layer-model ensembles (" .. bench_name .. ")", y_title = "accuracy", groups = groups,
    series = { { name = "accuracy", values = values } } }), { kind = "figure8" })

  M.weight_change_figure(fig, g, layers)
  print(("figures: %s_{contribution,ensembles,weight_change}.svg; ltrun sql @layer_scan"):format(fig))
end

return M

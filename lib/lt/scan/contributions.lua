-- lt/scan/contributions.lua: the numbers of a layer-contribution scan (*Is One Layer Enough?*),
-- apart from how the trainings ran: contributions, the ranking, the Table-7-like summary, the scan
-- key, and the scan's runs read back from the store (so the analysis also runs on a merged DB).
--
--   C_l = (S_l − S_base) / (S_full − S_base)
-- S is a score where higher is better (the mean accuracy over the in-domain benchmarks; C on
-- the overall score, the mean of the category means, is reported beside it). C_l = 1: layer
-- l alone does as well as training every layer; 0: no better than the base. When
-- |S_full − S_base| < min_gap, full training did not move the score and no C is defined.
local workers = require "lt.scan.workers"
local task = require "lt.scan.task"
local M = {}

-- contributions(scores, s_base, s_full[, min_gap]) → C (C[l] for each l in scores) or nil,
-- and a reason when C is undefined. scores: {[layer] = S_l}.
function M.contributions(scores, s_base, s_full, min_gap)
  min_gap = min_gap or 1e-9
  assert(type(scores) == "table", "layer_scan.contributions: argument 1: expected {[layer] = score}")
  assert(type(s_base) == "number" and type(s_full) == "number", "layer_scan.contributions: S_base and S_full must be numbers")
  local gap = s_full - s_base
  if gap == 0 or math.abs(gap) < min_gap then
    return nil, ("S_full − S_base = %.4g − %.4g = %.3g is below %.3g: full training did not change the score, "
                 .. "so C_l = (S_l − S_base)/(S_full − S_base) is undefined"):format(s_full, s_base, gap, min_gap)
  end
  local c = {}
  for l, s in pairs(scores) do c[l] = (s - s_base) / gap + 0 end  -- + 0: no "-0"
  return c
end

-- The layers sorted by C, best first (ties: lower layer first).
function M.ranking(c)
  local layers = {}
  for l in pairs(c) do layers[#layers + 1] = l end
  table.sort(layers, function(a, b)
    if c[a] ~= c[b] then return c[a] > c[b] end
    return a < b
  end)
  return layers
end

-- Which third of an n-block stack layer l lies in: 0 (shallow), 1 (middle), 2 (deep), as
-- floor(3 l / n); for 28 blocks the middle third is layers 10..18.
function M.third(l, n) return math.floor(3 * l / n) end

-- Table 7 of the paper: best and worst C with their layers, the number of layers with C ≥ 1,
-- the top-k layers and the share of them in the middle third.
function M.summary(c, n_layers, k)
  local rank = M.ranking(c)
  assert(#rank > 0, "layer_scan.summary: no contributions")
  k = math.min(k or 3, #rank)
  local s = { best = rank[1], best_c = c[rank[1]], worst = rank[#rank], worst_c = c[rank[#rank]],
              n_ge_1 = 0, n = #rank, top = {}, k = k, middle = 0 }
  for _, l in ipairs(rank) do if c[l] >= 1 then s.n_ge_1 = s.n_ge_1 + 1 end end
  for i = 1, k do
    s.top[i] = rank[i]
    if M.third(rank[i], n_layers) == 1 then s.middle = s.middle + 1 end
  end
  s.middle_share = s.middle / k
  return s
end

-- The runs of a scan in the store: the latest `ok` run of each job carrying param
-- scan_key = key (jobs "base", "full", "layer_<l>"), with its metric `score` and the
-- per-benchmark `score/<bench>`. → {base = {run, score, by_bench}, full = ..., layers =
-- {[l] = ...}}, missing = {job names with no ok run, of `expected` when given}.
function M.gather(key, expected, full_key)
  local rows = lt.run.query([[
    SELECT r.id, r.name, m.name AS metric, m.value FROM runs r
      JOIN params p ON p.run_id = r.id AND p.key = 'scan_key' AND p.value = ?
      JOIN metrics m ON m.run_id = r.id AND (m.name = 'score' OR m.name LIKE 'score/%')
     WHERE r.status = 'ok'
       AND r.id = (SELECT max(r2.id) FROM runs r2 JOIN params p2 ON p2.run_id = r2.id
                    AND p2.key = 'scan_key' AND p2.value = p.value
                    WHERE r2.name = r.name AND r2.status = 'ok')
     ORDER BY r.id, m.step]], key)
  local out = { layers = {} }
  for _, r in ipairs(rows) do
    local entry
    local l = workers.job_of(r.name).layer
    if l then
      out.layers[l] = out.layers[l] or { run = r.id, by_bench = {} }
      entry = out.layers[l]
    elseif r.name == "base" or r.name == "full" then
      out[r.name] = out[r.name] or { run = r.id, by_bench = {} }
      entry = out[r.name]
    end
    if entry then
      if r.metric == "score" then entry.score = r.value
      else entry.by_bench[r.metric:sub(7)] = r.value end
    end
  end
  if not out.full and full_key then  -- a full run reused from another scan (M.reuse_full)
    local f = lt.run.query([[SELECT r.id, m.name AS metric, m.value FROM runs r
      JOIN params p ON p.run_id = r.id AND p.key = 'full_key' AND p.value = ?
      JOIN metrics m ON m.run_id = r.id AND (m.name = 'score' OR m.name LIKE 'score/%')
     WHERE r.status = 'ok' AND r.name = 'full' AND r.id = (SELECT max(r2.id) FROM runs r2 JOIN params p2
       ON p2.run_id = r2.id AND p2.key = 'full_key' AND p2.value = p.value WHERE r2.name = 'full' AND r2.status = 'ok')
     ORDER BY m.step]], full_key)
    for _, r in ipairs(f) do
      out.full = out.full or { run = r.id, by_bench = {} }
      if r.metric == "score" then out.full.score = r.value else out.full.by_bench[r.metric:sub(7)] = r.value end
    end
  end
  out.missing = {}
  for _, job in ipairs(expected or {}) do
    local l = workers.job_of(job).layer
    local have = l and out.layers[l] or (not l and out[job])
    if not (have and have.score) then out.missing[#out.missing + 1] = job end
  end
  return out
end

-- mean and sample standard deviation (n − 1) of a list; std 0 for one value
function M.mean_std(xs)
  local n, s = #xs, 0
  assert(n > 0, "mean_std: empty list")
  for _, x in ipairs(xs) do s = s + x end
  local mean, v = s / n, 0
  for _, x in ipairs(xs) do v = v + (x - mean) ^ 2 end
  return mean, n > 1 and math.sqrt(v / (n - 1)) or 0
end

-- ---- scans in the store ---------------------------------------------------------------------
-- the contributions C_l of a finished scan run: {[layer] = C} (an error naming the run when
-- it has none)
function M.stored_contributions(run)
  local c, n = {}, 0
  for _, r in ipairs(lt.run.query("@scan_contributions", run)) do c[r.layer], n = r.value, n + 1 end
  if n == 0 then error(("run %d has no contributions (layer_metrics `contribution`): not a finished layer scan"):format(run), 0) end
  return c
end

-- the ids of the latest n scan runs with contributions, oldest first
function M.latest_scans(n)
  local ids = {}
  for _, r in ipairs(lt.run.query("@latest_scans", n)) do table.insert(ids, 1, r.run_id) end
  return ids
end

-- "run 12 (model=... algo=... bench=... data=...)"
function M.describe(run)
  local p = {}
  for _, r in ipairs(lt.run.query("@scan_describe", run)) do p[#p + 1] = r.key .. "=" .. r.value end
  return ("run %d (%s)"):format(run, table.concat(p, " "))
end

-- §3.2's second curve: C_l^overall, C on the overall score (the mean of the category means,
-- lt.scan.task.category_scores) beside the in-domain C_l (on S, the in-domain score, which ranks
-- the layers), and the Pearson r(C_l, C_l^overall) over the layers, one per scan (the paper
-- reports one per model). g: M.gather's; c: the in-domain C. Logs layer_metrics
-- contribution_overall, metric contribution_pearson_overall and param scores_overall; prints
-- the lines below. → {overall = {base, full, [l]}, c = {[l] = C^overall} or nil, r, p, lines}
function M.overall_contribution(cfg, g, layers, c)
  local out, lines = { overall = {} }, {}
  local function overall(entry)
    local _, o, _, cats = task.category_scores(entry.by_bench, cfg.task)
    return o, cats
  end
  local cats
  local ok, err = pcall(function()
    out.overall.base, cats = overall(g.base)
    out.overall.full = overall(g.full)
  end)
  if not ok then  -- a benchmark without a category (a scan stored before them): said, not fatal
    print("overall C: not computed: " .. tostring(err))
    out.lines = { "overall C: not computed: " .. tostring(err) }
    return out
  end
  local scores = {}
  for _, l in ipairs(layers) do scores[l] = overall(g.layers[l]); out.overall[l] = scores[l] end
  lines[#lines + 1] = ("overall = mean of the category means (%s): base %.4f, full %.4f"):format(
    table.concat(cats, ", "), out.overall.base, out.overall.full)
  local co, why = M.contributions(scores, out.overall.base, out.overall.full, cfg.min_gap)
  if not co then
    lines[#lines + 1] = "overall C: " .. why
  else
    out.c = co
    local a, b = {}, {}
    for i, l in ipairs(layers) do
      a[i], b[i] = c[l], co[l]
      lt.run.log_layers("contribution_overall", { co[l] }, { first = l })
    end
    lines[#lines + 1] = ("%-8s %14s %12s"):format("layer", "in-domain C", "overall C")
    for _, l in ipairs(layers) do lines[#lines + 1] = ("%-8d %14.3f %12.3f"):format(l, c[l], co[l]) end
    if #layers >= 3 then
      local r, p = lt.stats.pearson(a, b)
      out.r, out.p = r, p
      if r == r then
        lt.run.log("contribution_pearson_overall", r)
        lines[#lines + 1] = ("Pearson r(C_l, C_l^overall) = %.3f (p = %.2g, %d layers)"):format(r, p, #layers)
      else
        lines[#lines + 1] = "Pearson r(C_l, C_l^overall) undefined (C the same for every layer)"
      end
    else
      lines[#lines + 1] = ("Pearson r(C_l, C_l^overall): needs 3 layers or more (%d scanned)"):format(#layers)
    end
  end
  lt.run.param("scores_overall", ("base=%.6g,full=%.6g"):format(out.overall.base, out.overall.full))
  for _, line in ipairs(lines) do print(line) end
  out.lines = lines
  return out
end

-- ---- the scan key and a finished scan, read back by the studies that build on one ------------
-- The scan key: what makes two trainings comparable: the task, the hyper-parameters and the
-- run's seed (which orders the data and draws the samples), not workers or shards. full =
-- true: the key of the full job alone (the blocks' --layer_lr left out), its param full_key.
-- sweep = true: the key of an lr sweep's jobs (the rates of --lr_sweep instead of --lr).
function M.scan_key(cfg, full, sweep)
  local parts = {}
  for _, k in ipairs{ "model", "algo", "data", "bench", "bench_limit", "steps", "lr", "warmup", "seq_len",
                      "micro_batch", "eval_every" } do
    if not (sweep and k == "lr") then parts[#parts + 1] = k .. "=" .. tostring(cfg[k]) end
  end
  if (cfg.lr_sweep or "") ~= "" then parts[#parts + 1] = "lr_sweep=" .. cfg.lr_sweep end
  if cfg.task == "code" or cfg.task == "agent" then  -- (math and antonyms scans keep their keys of before --task)
    for _, part in ipairs(require("lt.scan.task." .. cfg.task).key_parts(cfg)) do parts[#parts + 1] = part end
  end
  if task.is_rl(cfg.algo) then
    for _, k in ipairs{ "score_samples", "score_temperature" } do parts[#parts + 1] = k .. "=" .. tostring(cfg[k]) end
    local go = task.grpo_options(cfg)  -- every GRPO option, as the jobs train with it
    for _, k in ipairs(require("lt.study.args").sorted_keys(go)) do parts[#parts + 1] = k .. "=" .. tostring(go[k]) end
  end
  if not full and (cfg.layer_lr or 0) > 0 then parts[#parts + 1] = "layer_lr=" .. tostring(cfg.layer_lr) end
  parts[#parts + 1] = ("seed=%.0f"):format(lt.run.seed())
  return "layer_scan:" .. workers.hash(table.concat(parts, ";"))
end

-- A finished scan run's task configuration and ranking, from its params: → task cfg (for
-- lt.scan.task.new), ranking {best first}
function M.stored_scan(run)
  if run == 0 then
    local r = lt.run.query("@latest_ranking")[1]
    run = r and r.id or error("no finished layer scan in the store (a run with param `ranking`); pass --scan=RUN", 0)
  end
  local sp = {}
  for _, r in ipairs(lt.run.query("@run_params", run)) do sp[r.key] = require("lt.study.args").coerce(r.value) end
  if not sp.ranking then error(("run %d has no param `ranking`: not a finished layer scan"):format(run), 0) end
  local cfg = {}
  cfg.task = sp.task  -- nil in a scan stored before --task: by its algorithm (lt.scan.task.resolve)
  for _, k in ipairs{ "model", "algo", "data", "bench", "bench_limit", "steps", "lr", "warmup", "seq_len", "micro_batch",
                      "eval_every", "work" } do
    if sp[k] == nil then error(("scan run %d lacks param `%s`"):format(run, k), 0) end
    cfg[k] = sp[k]
  end
  -- GRPO scans (score_samples / score_temperature: S from sampled answers, as the scan scored)
  for _, k in ipairs{ "prompts", "group_size", "max_response", "score_samples", "score_temperature", "epochs",
                      "mini_batches", "kl", "agg", "clip_ratio", "clip_high", "temperature",
                      "reward", "tests", "timeout", "size", "gamma", "omega", "gigpo_norm", "gigpo_scope",
                      "gigpo_lone", "penalty" } do  -- (code, agent)
    cfg[k] = sp[k]
  end
  if cfg.agg ~= nil then cfg.agg = tostring(cfg.agg) end
  cfg.work = (cfg.work ~= "" and cfg.work) or (cfg.model .. ".layer_scan")
  cfg.bench, cfg.model, cfg.data = tostring(cfg.bench), tostring(cfg.model), tostring(cfg.data)
  local rank = {}
  for l in tostring(sp.ranking):gmatch("%d+") do rank[#rank + 1] = tonumber(l) end
  return cfg, rank, run
end

return M

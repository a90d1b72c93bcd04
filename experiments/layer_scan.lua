-- experiments/layer_scan.lua: *Is One Layer Enough?* layer-contribution scan. Scores the base
-- model (S_base), trains every parameter (S_full), and trains each decoder block alone (every
-- other block, the embeddings, the final norm and the LM head frozen; the same data, steps
-- and hyper-parameters) as child runs `base`, `full`, `layer_<l>`; then
--   C_l = (S_l − S_base) / (S_full − S_base)
-- as layer_metrics `contribution` (grp "" for the mean score S, grp = benchmark for each one),
-- a Table-7-like summary, Figure 2 (C_l per layer), the layer-model ensembles of §5.1 (Figure
-- 8) and the weight change of §5.2 (Figure 9) as SVG artifacts. `ltrun sql @layer_scan`.
--
-- The N + 1 trainings are worker processes (lt.scan): --workers=K on CPU (threads split),
-- --devices=0,1 one job per GPU; a crashed worker leaves its run `crashed`, the scan runs the
-- other jobs and then fails naming it (exit code 1; the ok jobs' runs are kept); workers end
-- with the scan however it ends; --resume=true runs only jobs with no ok run of this scan (same scan key: model, data,
-- benchmarks, algorithm and hyper-parameters); --shard=i/n (or a SLURM job array) runs a
-- fixed subset into its own DB; after `ltrun db merge all.db shard*.db`,
-- `ltrun --db all.db experiments/layer_scan.lua --analyze=true [same options]` does the rest.
--
-- Training (--algo): grpo (the default) | dr_grpo (lt.rl.grpo with the math answer reward,
-- --steps batches of --prompts x --group_size rollouts, on --data=math: the tiny math model's
-- train.jsonl, or a JSONL prompt file; scored on `math_heldout`, the model's test.jsonl, or
-- gsm8k:FILE / math:FILE), or causal_lm (next-token loss on the antonym task's training
-- texts, scored on `antonyms_heldout`). --model, --data, --bench, --lr, --micro_batch and --bench_limit
-- default by algorithm (lt.scan_task.defaults): causal_lm on models/tiny-qwen3-8l, GRPO on
-- models/tiny-math-8l (made by experiments/pretrain_math.lua --layers=8 when missing).
-- S: the mean over --bench (comma-separated) of each benchmark's accuracy; on math_heldout
-- the share of correct answers among --score_samples=8 sampled at --score_temperature=1 per
-- item (avg@k: what GRPO raises on the tiny model, whose greedy answers barely move; 0: greedy),
-- with the greedy score logged beside it (score/math_heldout/greedy). The default: 50 steps
-- of 16 prompts x 8 samples; S_full − S_base about +0.12 (README: Layer scans). With
-- --eval_every=N the job is scored every N steps and S is the best score (the paper's
-- best-checkpoint protocol). GRPO: the full model also answers each item of the first math
-- benchmark --sc times (temperature --sc_temperature) in one call; the majority answer is
-- the self-consistency ensemble of Figure 8.
local exp = require "lt.experiment"
local scan = require "lt.scan"
local ls = require "lt.layer_scan"
local charts = require "lt.scan_charts"
local svg = require "lt.svg"

local cfg = exp.args{
  model = "", layers = "all", algo = "grpo", data = "", bench = "", bench_limit = 0, steps = 50,
  lr = 0, warmup = 0.1, seq_len = 96, micro_batch = 0, prompts = 16, group_size = 8, max_response = 24,
  score_samples = 8, score_temperature = 1.0,
  sc = 8, sc_temperature = 0.7, eval_every = 0, workers = 2, devices = "", resume = false,
  shard = "", analyze = false, job = "", scan_key = "", min_gap = 0.02, top_k = 3,
  work = "", pretrain_steps = 600, checkpoint_every = 0, checkpoint_dir = "",
}
local scan_task = require "lt.scan_task"
local rl = scan_task.is_rl(cfg.algo)
scan_task.defaults(cfg)  -- the algorithm's model, data, bench, lr, micro_batch, bench_limit
for _, k in ipairs{ "model", "data", "bench", "bench_limit", "lr", "micro_batch" } do lt.run.param(k, cfg[k]) end
cfg.work = cfg.work ~= "" and cfg.work or (cfg.model .. ".layer_scan")
local task = scan_task.new(cfg)

-- ---- one job, in a worker process (the run is already the child base/full/layer_<l>) -----
-- The job's checkpoints (--checkpoint_every=N or --checkpoint_dir=DIR; default folder
-- WORK/ckpt): DIR/<scan key>/<job>, so that a job run again (--resume=true after a crash or a
-- kill) continues from its last checkpoint instead of step 0.
local checkpointing = cfg.checkpoint_every > 0 or cfg.checkpoint_dir ~= ""
if cfg.checkpoint_every < 0 then error(("--checkpoint_every=%d: expected 0 (off) or more"):format(cfg.checkpoint_every), 0) end
if checkpointing and cfg.eval_every > 0 then
  error("--eval_every with --checkpoint_every / --checkpoint_dir: not supported together (the scores of the "
        .. "evaluations before a resume would be lost); leave one of them off", 0)
end
local function job_checkpoints(job, key)
  if not checkpointing then return {} end
  local root = cfg.checkpoint_dir ~= "" and cfg.checkpoint_dir or (cfg.work .. "/ckpt")
  local dir = ("%s/%s/%s"):format(root, (key:gsub("[^%w_.-]", "_")), job)
  local latest = lt.train.latest_checkpoint(dir)
  if latest then
    lt.run.param("resumed_from", latest)
    io.stderr:write(("%s: continuing from %s\n"):format(job, latest))
  end
  return { checkpoint_dir = dir, checkpoint_every = cfg.checkpoint_every > 0 and cfg.checkpoint_every or nil,
           resume = latest ~= nil }
end

local function run_job(job, key)
  lt.run.param("scan_key", key)
  local base = lt.model.load(cfg.model)
  if job == "base" then
    return task.score(base)
  end
  local m = base:clone()
  local l = job:match("^layer_(%d+)$")
  if l then
    m:train_only(tonumber(l))
  elseif job == "full" then
    m:train_only("all")
  else
    error(("--job=%s: expected base, full or layer_<l>"):format(job), 0)
  end
  lt.run.param("trainable", l and ("block " .. l) or "all")
  local s = task.train_and_score(m, job_checkpoints(job, key))
  if job == "full" and rl and cfg.sc > 0 then task.self_consistency(m, cfg.sc, cfg.sc_temperature) end
  lt.train.weight_change(m, base, { log = "weight_change" })
  m:free()
  return s
end

-- the scan key: what makes two trainings comparable (not workers, shards, seeds)
local function scan_key()
  local parts = {}
  for _, k in ipairs{ "model", "algo", "data", "bench", "bench_limit", "steps", "lr", "warmup", "seq_len",
                      "micro_batch", "eval_every" } do
    parts[#parts + 1] = k .. "=" .. tostring(cfg[k])
  end
  if rl then
    for _, k in ipairs{ "prompts", "group_size", "max_response", "score_samples", "score_temperature" } do
      parts[#parts + 1] = k .. "=" .. tostring(cfg[k])
    end
  end
  return "layer_scan:" .. scan.hash(table.concat(parts, ";"))
end

local key = cfg.scan_key ~= "" and cfg.scan_key or scan_key()
if cfg.job ~= "" then
  run_job(cfg.job, key)
  return
end

-- ---- the scan --------------------------------------------------------------------------------
lt.run.param("scan_key", key)
local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end
if cfg.model == "models/tiny-math-8l" and not exists(cfg.model .. "/config.json") then
  io.stderr:write(("no model at %s: making an 8-block tiny math model (experiments/pretrain_math.lua)\n"):format(cfg.model))
  lt.run.child("pretrain_math", assert(loadfile(exp.root .. "/experiments/pretrain_math.lua")),
               { "--out=" .. cfg.model, "--layers=8", "--steps=" .. cfg.pretrain_steps })
elseif cfg.model == "models/tiny-qwen3-8l" and not exists(cfg.model .. "/config.json") then
  io.stderr:write(("no model at %s: making an 8-block default base model (experiments/pretrain_tiny.lua)\n"):format(cfg.model))
  lt.run.child("pretrain_tiny", assert(loadfile(exp.root .. "/experiments/pretrain_tiny.lua")),
               { "--out=" .. cfg.model, "--layers=8", "--steps=" .. cfg.pretrain_steps })
end
local n_layers = lt.model.info(cfg.model).n_layers
local layers = ls.parse_layers(cfg.layers, n_layers)
local jobs = { "base", "full" }
for _, l in ipairs(layers) do jobs[#jobs + 1] = "layer_" .. l end

if not cfg.analyze then
  task.trainer()        -- an unknown or unavailable --algo fails here, not in every worker
  task.training_data()  -- made once, before the workers read it
  local argv = {}
  for _, a in ipairs(arg) do
    if not a:match("^%-%-job=") and not a:match("^%-%-scan_key=") and not a:match("^%-%-resume") then
      argv[#argv + 1] = a
    end
  end
  local res = scan.run{ jobs = jobs, workers = cfg.workers, devices = cfg.devices, key = key,
                        resume = cfg.resume, shard = cfg.shard, log_dir = cfg.work .. "/logs/" .. lt.run.id(),
                        argv = function(job)
                          local a = { arg[0], "--job=" .. job, "--scan_key=" .. key }
                          for _, x in ipairs(argv) do a[#a + 1] = x end
                          return a
                        end }
  print("scan: " .. scan.report(res))
  lt.run.log{ jobs_run = #res.jobs, jobs_skipped = #res.skipped, jobs_crashed = #res.crashed,
              jobs_failed = #res.failed, scan_wall_s = res.wall_s }
  scan.check(res)  -- a crashed or failed job fails the scan (its run, its exit code), naming the job
end

-- ---- analysis: from the store (all shards merged, resumed scans included) -----------------
local g = ls.gather(key, jobs)
if #g.missing > 0 then
  print(("scan %s: no ok run yet for %s; contributions need all of them (run again with --resume=true, "
         .. "or merge the shards' DBs with `ltrun db merge` and run with --analyze=true)"):format(key, table.concat(g.missing, ", ")))
  return
end
local scores = {}
for _, l in ipairs(layers) do scores[l] = g.layers[l].score end
print(("S_base = %.4f, S_full = %.4f (mean over %s)"):format(g.base.score, g.full.score, cfg.bench))
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
      lt.run.log_layers("contribution", { (s - g.base.by_bench[bench]) / gap }, { first = l, grp = bench })
    end
  end
end

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

scan.mkdir(cfg.work .. "/figures")
local fig = ("%s/figures/layer_scan_%d"):format(cfg.work, lt.run.id())
local cs = {}
for i, l in ipairs(layers) do cs[i] = c[l] end
lt.run.artifact(charts.contribution(fig .. "_contribution.svg", {
  title = ("Layer contribution C_l (%s, %s)"):format(cfg.model:match("[^/]+$"), cfg.algo), layers = layers, c = cs }),
  { kind = "figure2" })

-- §5.1 ensembles: majority vote of the top-k layer models against the best single layer
-- model, the full model and the base, on the first benchmark's items (from eval_items)
local bench_name, protocol, compare = require("lt.scan_task").bench_name(cfg.bench:match("^[^,]+"))
local function acc_of(run)
  local r = lt.run.query("SELECT avg(correct) AS acc FROM eval_items WHERE run_id = ? AND bench = ? AND protocol = ? "
                         .. "AND item_id NOT LIKE '%#%'", run, bench_name, protocol)[1]
  return r and r.acc or 0
end
local groups, values = { "base", "full", ("best single (layer %d)"):format(rank[1]) },
                       { acc_of(g.base.run), acc_of(g.full.run), acc_of(g.layers[rank[1]].run) }
for _, kk in ipairs{ 3, 5 } do
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

-- §5.2 weight change: per block ||trained − base||, the full run against each block alone
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
print(("figures: %s_{contribution,ensembles,weight_change}.svg; ltrun sql @layer_scan"):format(fig))

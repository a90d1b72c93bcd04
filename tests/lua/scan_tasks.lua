-- tests/lua/scan_tasks.lua: the tasks of a layer scan (lt.scan.task.resolve, defaults, scan keys)
-- and the analysis of a code / agent scan from the store, on job runs written here with chosen
-- scores (dyadic values, so that C_l is exact): C_l per block, the ranking, Figures 2 and 9, no
-- ensembles (those tasks log no answers to vote on); C undefined below --min_gap.
local T = require "lt.test"
local st = require "lt.scan.task"
local ls = require "lt.scan.contributions"
local analysis = require "experiments.layer_scan.analysis"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_scan_tasks"
lt.fs.remove(tmp)
lt.fs.mkdir(tmp)

T.case("task and algorithm: defaults by each other, the pairs a task does not train refused", function()
  local function r(task, algo)
    local c = st.resolve{ task = task, algo = algo }
    return c.task .. "/" .. c.algo
  end
  T.eq(r("", ""), "math/grpo")
  T.eq(r(nil, "grpo"), "math/grpo", "a scan stored before --task")
  T.eq(r("", "causal_lm"), "antonyms/causal_lm")
  T.eq(r("", "gigpo"), "agent/gigpo")
  T.eq(r("code", ""), "code/grpo")
  T.eq(r("code", "dr_grpo"), "code/dr_grpo")
  T.eq(r("agent", ""), "agent/gigpo")
  T.eq(r("agent", "grpo"), "agent/grpo")
  T.raises(function() r("code", "causal_lm") end, "%-%-task=code %-%-algo=causal_lm: the code task trains with grpo or dr_grpo only")
  T.raises(function() r("agent", "dr_grpo") end, "the agent task trains with gigpo or grpo only")
  T.raises(function() r("antonyms", "gigpo") end, "the antonyms task trains with causal_lm only")
  T.raises(function() r("vision", "") end, "%-%-task=vision: expected one of math, antonyms, code, agent")
end)

T.case("defaults of the code and agent tasks; their settings in the scan key, math keys as before", function()
  local c = st.defaults{ task = "code", algo = "", model = "m", data = "", bench = "", bench_limit = 0, lr = 0, micro_batch = 0 }
  T.same_table({ c.algo, c.data, c.bench, c.bench_limit, c.lr, c.micro_batch }, { "grpo", "code", "code_heldout", 100, 1e-4, 32 })
  local a = st.defaults{ task = "agent", algo = "", model = "m", data = "", bench = "", bench_limit = 0, lr = 0, micro_batch = 0 }
  T.same_table({ a.algo, a.data, a.bench, a.bench_limit, a.lr, a.micro_batch }, { "gigpo", "sokoban", "sokoban", 100, 1e-4, 64 })
  T.eq(st.grpo_options(a).kl, 0, "agent: kl -1 is agent.lua's 0")
  local function cfg(task, algo)
    return { task = task, algo = algo, model = "m", data = "d", bench = "b", bench_limit = 4, steps = 2, lr = 1e-4,
             warmup = 0.1, seq_len = 96, micro_batch = 4, eval_every = 0, prompts = 2, group_size = 2, max_response = 8,
             score_samples = 2, score_temperature = 1, reward = "share", tests = "base", size = 5, gamma = 0.95, omega = 1 }
  end
  local old = cfg(nil, "grpo")  -- as a scan stored before --task
  old.reward, old.tests, old.size, old.gamma, old.omega = nil, nil, nil, nil, nil
  T.eq(ls.scan_key(cfg("math", "grpo")), ls.scan_key(old), "a math scan keeps its key")
  T.ok(ls.scan_key(cfg("code", "grpo")) ~= ls.scan_key(cfg("math", "grpo")), "code and math differ")
  T.ok(ls.scan_key(cfg("agent", "gigpo")) ~= ls.scan_key(cfg("agent", "grpo")), "gigpo and grpo differ")
  local o = cfg("agent", "gigpo")
  o.omega = 0.5
  T.ok(ls.scan_key(o) ~= ls.scan_key(cfg("agent", "gigpo")), "omega is in the key")
end)

-- job runs of a scan with key `key`: {name, S, {weight change per block}}
local function jobs(key, list)
  for _, j in ipairs(list) do
    lt.run.child(j[1], function()
      lt.run.param("scan_key", key)
      lt.run.log{ score = j[2], ["score/code_heldout"] = j[2] }
      lt.run.log_layers("weight_change", j[3])
    end)
  end
end

T.case("analysis of a code scan: C_l per block, ranking, Figures 2 and 9, no ensembles", function()
  local key = "layer_scan:test_code"
  jobs(key, { { "base", 0.25, { 0, 0, 0 } }, { "full", 0.75, { 1, 1, 1 } }, { "layer_0", 0.5, { 2, 0, 0 } },
              { "layer_1", 0.25, { 0, 3, 0 } }, { "layer_2", 1.0, { 0, 0, 4 } } })
  local cfg = { task = "code", algo = "grpo", model = tmp .. "/m", bench = "code_heldout", min_gap = 0.02, top_k = 3, work = tmp }
  analysis.analyze(cfg, key, { "base", "full", "layer_0", "layer_1", "layer_2" }, { 0, 1, 2 }, 3, { 3, 5 })
  local c = {}
  for _, r in ipairs(lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'contribution' AND grp = ''",
                                  lt.run.id())) do
    c[r.layer] = r.value
  end
  T.same_table(c, { [0] = 0.5, [1] = 0, [2] = 1.5 }, "(S_l - 0.25) / 0.5")
  local p = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'ranking'", lt.run.id())[1]
  T.eq(p and p.value, "2,0,1")
  local kinds = {}
  for _, r in ipairs(lt.run.query("SELECT kind FROM artifacts WHERE run_id = ? ORDER BY kind", lt.run.id())) do
    kinds[#kinds + 1] = r.kind
  end
  T.same_table(kinds, { "figure2", "figure9" }, "no Figure 8: a code scan has no answers to vote on")
end)

T.case("analysis of an agent scan below --min_gap: C undefined, none logged", function()
  local key = "layer_scan:test_agent"
  jobs(key, { { "base", 0.5, { 0, 0 } }, { "full", 0.5, { 1, 1 } }, { "layer_0", 0.75, { 1, 0 } } })
  local n0 = #lt.run.query("SELECT 1 FROM layer_metrics WHERE run_id = ? AND name = 'contribution'", lt.run.id())
  analysis.analyze({ task = "agent", algo = "gigpo", model = tmp .. "/m", bench = "sokoban", min_gap = 0.02, top_k = 3, work = tmp },
             key, { "base", "full", "layer_0" }, { 0 }, 2, { 3, 5 })
  T.eq(#lt.run.query("SELECT 1 FROM layer_metrics WHERE run_id = ? AND name = 'contribution'", lt.run.id()), n0)
  local p = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'contribution'", lt.run.id())[1]
  T.ok(p and p.value:find("^undefined: S_full − S_base = 0.5 − 0.5 = 0"), p and p.value)
end)
T.case("a math scan's S with out-of-domain benchmarks: amc average@k, IFEval, MGSM, by category", function()
  local data = arg[0]:match("^(.*)/lua/[^/]+$") .. "/data"
  lt.model.new{ out = tmp .. "/ood", layers = 1, hidden = 16, heads = 2, kv_heads = 1, vocab = 300, seed = 4,
                corpus = data .. "/eval" }
  local f = assert(io.open(tmp .. "/amc.jsonl", "w"))
  for i = 1, 3 do f:write(lt.json.encode{ problem = ("What is %d + %d?"):format(i, i), answer = tostring(2 * i) }, "\n") end
  f:close()
  local bench = table.concat({ "amc:" .. tmp .. "/amc.jsonl@2", "ifeval:" .. data .. "/ifeval/sample.jsonl",
                               "mgsm:" .. data .. "/mgsm" }, ",")
  local cfg = { task = "math", algo = "grpo", model = tmp .. "/ood", bench = bench, bench_limit = 2, max_response = 4,
                score_samples = 0, score_temperature = 1 }
  local s
  lt.run.child("ood", function() s = st.new(cfg).score(lt.model.load(tmp .. "/ood")) end)
  lt.run.flush()
  local run = lt.run.query("SELECT max(id) AS id FROM runs WHERE name = 'ood'")[1].id
  local m = {}
  for _, r in ipairs(lt.run.query("SELECT name, value FROM metrics WHERE run_id = ?", run)) do m[r.name] = r.value end
  local amc, ife, mg = "score/amc:" .. tmp .. "/amc.jsonl@2", "score/ifeval:" .. data .. "/ifeval/sample.jsonl",
                       "score/mgsm:" .. data .. "/mgsm"
  for _, k in ipairs{ amc, ife, mg, amc .. "/greedy" } do T.ok(m[k] and m[k] >= 0 and m[k] <= 1, k .. " logged") end
  -- average@2 of the 2 sampled items: 4 answers, so a multiple of 1/4
  T.near(m[amc] * 4, math.floor(m[amc] * 4 + 0.5), 1e-12)
  T.eq(s, m[amc], "S is the in-domain (math) score")
  T.eq(m.score, s)
  T.near(m["score_category/language"], (m[ife] + m[mg]) / 2, 1e-12)
  T.near(m.score_overall, (m[amc] + m["score_category/language"]) / 2, 1e-12)
  -- IFEval: its prompt-level strict accuracy, logged by ifeval.evaluate; MGSM: the mean over languages
  T.near(m[ife], m["ifeval/strict/prompt_acc"], 1e-12)
  T.near(m[mg], m["mgsm/native/acc_macro"], 1e-12)
  T.eq(st.category("amc:x.jsonl@32"), "math")
  T.same_table({ st.sampled("math_heldout@8") }, { "math_heldout", 8 })
  T.same_table({ st.sampled("gsm8k:a@b.jsonl") }, { "gsm8k:a@b.jsonl" })
end)

T.finish()

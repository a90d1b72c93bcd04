-- lt/scan/task.lua: the task of the layer-scan studies (layer_scan.lua, layer_strategies.lua).
-- cfg.task (""; by the algorithm) and cfg.algo ("": the task's first) — M.tasks:
--   antonyms / causal_lm: next-token loss on WordNet's everyday adjective antonym pairs: the
--     train side of lt.tasks.split_pairs written as training texts (4-way questions with their
--     answer letter, seed 2), scored on lt.eval's built-in `antonyms_heldout` (the test side);
--   math / grpo | dr_grpo: lt.rl.grpo with the math answer reward on a JSONL prompt set
--     (--data=math: the model folder's train.jsonl, as experiments/pretrain_math/pretrain_math.lua writes it;
--     or a path), scored on `math_heldout` (the model folder's test.jsonl, prompts in the tiny
--     math model's format: avg@k of cfg.score_samples answers at cfg.score_temperature, or
--     greedy answers when score_samples is 0; the greedy score is logged either way, as
--     score/math_heldout/greedy) or any lt.eval math benchmark (gsm8k:FILE, math:FILE);
--   code / grpo | dr_grpo: lt.rl.grpo with the sandboxed test reward (lt.scan.task.code, as
--     experiments/code_rl/code_rl.lua), S = held-out pass@1 (code_heldout: the model folder's test.jsonl);
--   agent / gigpo | grpo: episodes in a text environment (lt.scan.task.agent, as
--     experiments/agent/agent.lua), S = the success rate on held-out seeds.
-- plus any lt.eval benchmark (math, antonyms), and out of domain ifeval:FILE (prompt-level strict
-- accuracy), mgsm:FILE|DIR (the mean over its languages, each asked in its own), humaneval:FILE
-- and mbpp:FILE (pass@1); amc:FILE and SPEC@k score average@k of sampled answers (the paper's
-- AMC: average@32). S = the mean accuracy over the benchmarks of the
-- task's in-domain category (M.categories); the overall score (the mean of the category means)
-- is logged beside it as score_overall.
--   local task = require("lt.scan.task").new(cfg)  -- cfg.model, algo, data, bench, bench_limit, work
--   task.training_data() → packed corpus folder (causal_lm) or prompt items (GRPO);
--   task.score(m[, rep]) → S (logged); task.self_consistency(m, k, temperature) (GRPO, math);
--   task.train_and_score(m, o) → S; task.run_job(job, key): one job of a scan in its worker
-- Seeds: the data order, the samples and the held-out subsets come from the run's seed
-- streams (a scan's workers share its seed); the training texts' items (seed 2) and the
-- built-in benchmarks are fixed data.
local study = require "lt.study"
local tasks = require "lt.tasks"
local math_task = require "lt.tasks.math"
local M = {}

-- the prompt format of the tiny math model (lt.tasks.math)
M.math_template = require("lt.tasks.math").template

-- trained by lt.rl.grpo (its rollouts, or an agent's episodes)
function M.is_rl(algo) return algo == "grpo" or algo == "dr_grpo" or algo == "gigpo" end

-- the tasks and the algorithms each trains with (the first is its default)
M.tasks = { math = { "grpo", "dr_grpo" }, antonyms = { "causal_lm" }, code = { "grpo", "dr_grpo" },
            agent = { "gigpo", "grpo" } }
M.task_names = { "math", "antonyms", "code", "agent" }

-- cfg.task and cfg.algo resolved in place: task "" from the algorithm (causal_lm: antonyms,
-- gigpo: agent, else math; a scan stored before --task has none), algo "" the task's first. A
-- pair the task does not train with is an error naming both. → cfg
function M.resolve(cfg)
  local task, algo = cfg.task or "", cfg.algo or ""
  if task == "" then task = (algo == "causal_lm" and "antonyms") or (algo == "gigpo" and "agent") or "math" end
  local algos = M.tasks[task]
  if not algos then error(("--task=%s: expected one of %s"):format(task, table.concat(M.task_names, ", ")), 0) end
  if algo == "" then algo = algos[1] end
  local ok = false
  for _, a in ipairs(algos) do ok = ok or a == algo end
  if not ok then
    error(("--task=%s --algo=%s: the %s task trains with %s only"):format(task, algo, task, table.concat(algos, " or ")), 0)
  end
  cfg.task, cfg.algo = task, algo
  return cfg
end

-- the task's args (study.study specs) for the scan studies; "" or 0: the algorithm's default
M.args = {
  task = { "", "task (\"\": by --algo: antonyms for causal_lm, agent for gigpo, else math)",
           choices = { "", "math", "antonyms", "code", "agent" } },
  model = { "", "model folder (\"\": lt.models tiny-math-8l (math), tiny-qwen3-8l (antonyms), tiny-code-8l (code), "
                .. "tiny-agent (agent))", path = true },
  algo = { "", "training (\"\": the task's first: math, code grpo|dr_grpo; antonyms causal_lm; agent gigpo|grpo)",
           choices = { "", "grpo", "dr_grpo", "causal_lm", "gigpo" } },
  data = { "", "training data: math (MODEL/train.jsonl), a JSONL prompt file, antonyms (causal_lm); code (MODEL/"
               .. "train.jsonl) or a HumanEval/MBPP JSONL; sokoban (agent: seeds after the held-out ones)" },
  bench = { "", "benchmarks, comma-separated (math_heldout, gsm8k:FILE, math:FILE, amc:FILE (average@32), SPEC@k "
                .. "(average@k), antonyms_heldout, ...; out of domain: ifeval:FILE, mgsm:FILE|DIR, humaneval:FILE, mbpp:FILE, "
                .. "ceval:DIR, mmlu:DIR, mc:FILE; code: code_heldout (MODEL/test.jsonl); agent: sokoban, household)" },
  bench_limit = { 0, "items per benchmark (agent: held-out seeds 1..N; 0: the task's default)", int = true, min = 0 },
  steps = { 50, "training steps of each job", int = true, min = 1 },
  lr = { 0, "learning rate (0: the algorithm's default)", min = 0 },
  warmup = { 0.1, "warmup share of the steps", min = 0 },
  seq_len = { 96, "causal_lm: tokens per window", int = true, min = 2 },
  micro_batch = { 0, "sequences per pass (0: the algorithm's default)", int = true, min = 0 },
  score_samples = { 8, "math and code benchmarks: S from avg@k of k sampled answers (pass@1; agent: episodes per "
                       .. "held-out seed; 0: greedy)", int = true, min = 0 },
  score_temperature = { 1.0, "temperature of those samples", min = 0 },
  eval_every = { 0, "score every N steps, S the best (0: at the end)", int = true, min = 0 },
  work = { "", "work folder (\"\": MODEL.layer_scan)" },
  -- more of lt.rl.grpo's options, by its names, with the scan's meanings of -1 / "" / 0 (M.grpo_options)
  kl = { -1, "GRPO: coefficient of the k3 KL to the base model (-1: the algorithm's: grpo 0.001, dr_grpo 0)",
         min = -1 },
  agg = { "", "GRPO: loss aggregation (\"\": the algorithm's; paper: per-response length normalisation, "
              .. "seq-mean-token-mean, for grpo and the constant normaliser, seq-mean-token-sum-norm, for dr_grpo)",
          choices = { "", "paper", "token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm" } },
  clip_high = { 0, "GRPO: the high side's epsilon, clip-higher (0: clip_ratio)", min = 0 },
  lr_sweep = { "", "learning rates for the full job, comma-separated: the one whose reported score S is best "
                   .. "becomes --lr, as the paper tunes the full-parameter baseline (\"\": no sweep)" },
  -- the code task's (experiments/code_rl/code_rl.lua's names) and the agent task's
  -- (experiments/agent/agent.lua's)
  reward = { "share", "code: the reward, the share of a task's tests passed, or 1 when all pass",
             choices = { "share", "all" } },
  tests = { "base", "code: which tests (EvalPlus: base or base+plus inputs; MBPP: + challenge tests)",
            choices = { "base", "plus" } },
  timeout = { 10, "code: seconds per program", min = 0.1 },
  size = { 5, "agent: Sokoban grid size", int = true, min = 5, max = 10 },
  gamma = { 0.95, "agent: discount of the step returns", min = 0, max = 1 },
  omega = { 1.0, "agent: GiGPO's weight of the step advantages (grpo: 0)", min = 0 },
  -- GiGPO as verl-agent computes it by default (runtime/rl/gigpo.h), each difference an option
  gigpo_norm = { "std", "agent: advantage normalisation (std: verl-agent's mean_std_norm; none: mean_norm)",
                 choices = { "std", "none" } },
  gigpo_scope = { "steps", "agent: the episode advantage's mean and std over the step rows (verl-agent) or over the "
                           .. "episodes (the paper's Eq. 3)", choices = { "steps", "episodes" } },
  gigpo_lone = { "pass", "agent: a lone episode's return passed through (verl-agent) or zero", choices = { "pass", "zero" } },
  penalty = { "row", "agent: the invalid-action penalty on its step's row only (verl-agent) or inside the reward "
                     .. "(earlier returns too)", choices = { "row", "reward" } },
}
-- lt.rl.grpo's own options with the scan's defaults, declared where lt.rl.grpo is (study.args_of)
for k, spec in pairs(study.args_of("lt.rl.grpo", { prompts = 16, max_response = 24 }, { "prompts", "group_size",
    "max_response", "epochs", "mini_batches", "clip_ratio", "temperature" })) do M.args[k] = spec end

-- the learning rates of cfg.lr_sweep ({} when none), each checked
function M.sweep_lrs(cfg)
  local out = {}
  for x in (cfg.lr_sweep or ""):gmatch("[^,]+") do
    local v = tonumber(x)
    if not v or v <= 0 or v ~= v or v == math.huge then
      error(("--lr_sweep=%s: '%s' is not a learning rate (a number > 0)"):format(cfg.lr_sweep, x), 0)
    end
    out[#out + 1] = v
  end
  return out
end

-- the GRPO options of a scan's cfg, resolved (kl and agg from the algorithm where left to it),
-- as lt.rl.grpo takes them; a scan stored before these options reached it (nil) gets
-- lt.rl.grpo's defaults, which are the args' defaults
-- (agent: kl -1 stands for 0, as experiments/agent/agent.lua trains)
function M.grpo_options(cfg)
  local preset = lt.rl.preset(cfg.algo == "gigpo" and "grpo" or cfg.algo)
  local kl = cfg.kl or -1
  if kl < 0 and kl ~= -1 then error(("--kl=%s: expected -1 (the algorithm's) or a coefficient >= 0"):format(kl), 0) end
  if kl == -1 and cfg.task == "agent" then kl = 0 end
  local agg = cfg.agg or ""
  if agg == "" then agg = preset.agg
  elseif agg == "paper" then agg = cfg.algo == "dr_grpo" and "seq-mean-token-sum-norm" or "seq-mean-token-mean" end
  return { algo = cfg.algo, prompts = cfg.prompts, group_size = cfg.group_size, max_response = cfg.max_response,
           epochs = cfg.epochs or 1, mini_batches = cfg.mini_batches or 1, kl = kl >= 0 and kl or preset.kl, agg = agg,
           clip_ratio = cfg.clip_ratio or 0.2,
           clip_high = (cfg.clip_high or 0) > 0 and cfg.clip_high or (cfg.clip_ratio or 0.2),
           temperature = cfg.temperature or 1.0 }
end

-- each task's defaults for the options left at "" or 0
M.task_defaults = {
  math = { model = "tiny-math-8l", data = "math", bench = "math_heldout", lr = 1e-4, micro_batch = 32, bench_limit = 200 },
  antonyms = { model = "tiny-qwen3-8l", data = "antonyms", bench = "antonyms_heldout", lr = 3e-3, micro_batch = 8,
               bench_limit = 120 },
  -- code_rl.lua's lr and micro-batch; 100 items: all 96 of the tiny code model's held-out tasks
  code = { model = "tiny-code-8l", data = "code", bench = "code_heldout", lr = 1e-4, micro_batch = 32, bench_limit = 100 },
  -- agent.lua's: 100 held-out seeds
  agent = { model = "tiny-agent", data = "sokoban", bench = "sokoban", lr = 1e-4, micro_batch = 64, bench_limit = 100 },
}

-- Options the scan leaves at "" or 0 take their task's default (M.resolve first): the embedded
-- default model, data and benchmark of that training, and its learning rate and micro-batch.
-- Changes cfg in place and returns it; in a run, logs the GRPO kl, agg and clip_high that the
-- scan's "" / -1 / 0 stand for (params grpo_kl, grpo_agg, grpo_clip_high).
function M.defaults(cfg)
  M.resolve(cfg)
  local rl = M.is_rl(cfg.algo)
  local d = M.task_defaults[cfg.task]
  for k, v in pairs(d) do
    if cfg[k] == nil or cfg[k] == "" or cfg[k] == 0 then cfg[k] = k == "model" and lt.models.get(v) or v end
  end
  cfg.work = (cfg.work and cfg.work ~= "") and cfg.work or (cfg.model .. ".layer_scan")
  if rl and lt.run.id() then
    local go = M.grpo_options(cfg)  -- what "" and -1 resolved to, beside the args
    lt.run.param{ grpo_kl = go.kl, grpo_agg = go.agg, grpo_clip_high = go.clip_high }
  end
  return cfg
end


-- ---- categories: the overall score of *Is One Layer Enough?* (§3.1, §3.2, Table 2) --------------
-- Each benchmark counts in one category; the overall score is the unweighted mean of the
-- category means (Qwen3 base: mean(44.1, 34.9, 20.7, 41.7) = 35.4, not the plain mean of the 12
-- benchmarks). The paper's four: Math (MATH500, GSM8K, OlympiadBench, AMC; in-domain), Code
-- (HumanEval+, MBPP, LiveCodeBench), Reasoning (GPQA-Diamond, MMLU-Pro) and Language (C-Eval,
-- IFEval, MGSM); this tool's own benchmarks join the category of their kind. The ranking of the
-- layers comes from the in-domain category alone (the task's: M.in_domain), so adding
-- out-of-domain benchmarks to --bench does not change it.
M.categories = {
  math = { "math_heldout", "gsm8k", "math", "math500", "olympiadbench", "amc", "aime", "minerva" },
  code = { "code_heldout", "humaneval", "mbpp", "livecodebench" },
  reasoning = { "mc", "mmlu", "mmlu_pro", "gpqa" },
  language = { "ceval", "cmmlu", "ifeval", "mgsm" },
  lexical = { "antonyms", "antonyms_heldout" },
  agent = { "sokoban", "household" },
}
M.category_names = { "math", "code", "reasoning", "language", "lexical", "agent" }
M.in_domain = { math = "math", code = "code", agent = "agent", antonyms = "lexical" }

local category_of = {}
for cat, names in pairs(M.categories) do for _, n in ipairs(names) do category_of[n] = cat end end

-- the category of a --bench entry (its name before ':'); an error naming it when it has none
function M.category(bench)
  bench = M.sampled(bench)
  local name = bench:match("^([%w_]+):") or bench
  return category_of[name] or error(("--bench=%s: '%s' has no category (known: %s)"):format(bench, name,
    table.concat(require("lt.study.args").sorted_keys(category_of), ", ")), 0)
end

-- scores {[bench] = S_bench} (keys ending in "/greedy", score/<bench>/greedy, are a benchmark's
-- side metric and left out) of a `task` → in-domain score (the mean over the in-domain category's
-- benchmarks), overall (the mean of the category means), {[category] = mean}, the categories
-- present (in M.category_names order). An error when no benchmark is in-domain.
function M.category_scores(scores, task)
  local sum, n = {}, {}
  for bench, s in pairs(scores) do
    if not bench:find("/greedy$") then
      local cat = M.category(bench)
      sum[cat], n[cat] = (sum[cat] or 0) + s, (n[cat] or 0) + 1
    end
  end
  local means, present, total = {}, {}, 0
  for _, cat in ipairs(M.category_names) do
    if n[cat] then
      means[cat] = sum[cat] / n[cat]
      present[#present + 1] = cat
      total = total + means[cat]
    end
  end
  local home = M.in_domain[task] or error(("category_scores: task '%s' has no in-domain category"):format(tostring(task)), 0)
  if not means[home] then
    local names = require("lt.study.args").sorted_keys(scores)
    error(("--bench=%s: no %s benchmark, the task's in-domain category (the layers are ranked by it)")
          :format(table.concat(names, ","), home), 0)
  end
  return means[home], total / #present, means, present
end

-- logs a job's scores by category (score_category/<cat>, score_overall) and S, the in-domain
-- score, as `score`. accs: {[bench] = S_bench} → S
function M.log_scores(accs, task)
  local s, overall, means = M.category_scores(accs, task)
  for cat, v in pairs(means) do lt.run.log("score_category/" .. cat, v) end
  lt.run.log("score_overall", overall)
  lt.run.log("score", s)
  return s
end

-- a --bench entry "SPEC@k" (S: average@k of k sampled answers) → SPEC, k; else bench, nil
function M.sampled(bench)
  local spec, k = bench:match("^(.-)@(%d+)$")
  if spec and tonumber(k) >= 1 then return spec, tonumber(k) end
  return bench, nil
end

-- the benchmark name as stored in eval_items and its protocol
function M.bench_name(bench)
  bench = M.sampled(bench)
  local name = bench:match("^(%w+):") or bench
  local gen = name == "gsm8k" or name == "math" or name == "math_heldout" or name == "amc"
  return name, gen and "generate" or "logit", gen and "math" or "exact"
end

function M.new(cfg)
  M.resolve(cfg)
  local t = {}
  local function mkdir(p) require("lt.scan.workers").mkdir(p) end

  -- the held-out math items of `bench` (math_heldout, gsm8k:FILE, math:FILE), or nil
  local function math_items(bench)
    bench = M.sampled(bench)
    local path, format
    if bench == "math_heldout" then
      path, format = cfg.model .. "/test.jsonl", "gsm8k"
    else
      local kind, p = bench:match("^(%w+):(.+)$")
      if kind == "gsm8k" or kind == "math" or kind == "amc" then path, format = p, kind == "gsm8k" and "gsm8k" or "math500" end
    end
    if not path then return nil end
    return lt.eval.load(format, path)
  end

  -- GRPO: the training prompts, without any whose question shares a word 8-gram with a
  -- held-out math item (whole questions for the default data, whose template problems share
  -- long word runs; pretrain_math.lua keeps the test questions out of it)
  local function rl_prompts()
    local path = cfg.data == "math" and (cfg.model .. "/train.jsonl") or cfg.data
    local items = lt.rl.prompts(path)
    local texts = {}
    for bench in cfg.bench:gmatch("[^,]+") do
      for _, it in ipairs(math_items(bench) or {}) do texts[#texts + 1] = it.question end
    end
    if #texts == 0 then return items end
    local kept, removed = lt.rl.decontaminate(items, texts, { n = cfg.data == "math" and 1000 or 8 })
    assert(#kept > 0, ("--data=%s: decontamination against the benchmarks removed every prompt"):format(cfg.data))
    if lt.run.id and removed > 0 then lt.run.param("decontaminated", removed) end
    return kept
  end

  -- the packed training texts (made once, before workers read them); GRPO: the prompt items
  function t.training_data()
    if M.is_rl(cfg.algo) then return rl_prompts() end
    local dir = cfg.work .. "/data"
    local f = io.open(dir .. "/index.json")
    if f then f:close(); return dir end
    assert(cfg.data == "antonyms", ("--data=%s: the layer-scan task knows `antonyms` only"):format(cfg.data))
    mkdir(cfg.work)
    local train = tasks.wordnet_antonyms("train")
    local path = cfg.work .. "/train.jsonl"
    local out = assert(io.open(path, "w"))
    for _, it in ipairs(tasks.choice_items(train, { n = #train, seed = 2 })) do
      out:write(lt.json.encode{ text = lt.eval.prompt(it) .. " " .. it.answer }, "\n")
    end
    out:close()
    lt.data.pack{ tokenizer = cfg.model, inputs = { path }, out = dir, val = 0.02, progress = false }
    return dir
  end

  -- S: mean accuracy over cfg.bench (comma-separated), each logged as score/<bench>;
  -- `rep` (1, 2, ...): the repetition of a repeated evaluation, each on another held-out
  -- sample drawn from the run's stream "eval.repeat"; nil: the scan's sample (every item in
  -- file order when the benchmark has no more than bench_limit, else one drawn from the run's
  -- stream "eval.subset"), the same in every job of a scan (its workers share the seed)
  function t.score(m, rep)
    local seed = rep and lt.run.seed("eval.repeat", rep) or nil
    local accs = {}
    for bench in cfg.bench:gmatch("[^,]+") do
      local acc
      local spec, k = M.sampled(bench)
      local kind, path = spec:match("^([%w_]+):(.+)$")
      -- math_heldout, amc (average@32, as the paper's AMC) and any math benchmark with @k: S from
      -- a seeded sample of bench_limit items; gsm8k/math without @k: lt.eval.run's first items
      local mi = (spec == "math_heldout" or k or kind == "amc") and math_items(spec)
      if kind == "amc" and not k then k = 32 end
      if spec == "math_heldout" and not k and (cfg.score_samples or 0) > 0 then k = cfg.score_samples end
      local template = spec == "math_heldout" and M.math_template or nil
      if mi then
        -- a seeded sample of bench_limit items (all of them in file order when seed is 1 and
        -- the file has no more)
        local items = mi
        if #mi > cfg.bench_limit or seed then
          local pick, used = tasks.generator(seed or lt.run.seed("eval.subset")), {}
          items = {}
          while #items < math.min(cfg.bench_limit, #mi) do
            local i = pick(#mi)
            if not used[i] then used[i] = true; items[#items + 1] = mi[i] end
          end
        end
        local name = M.bench_name(spec)
        acc = lt.eval.score(m, items, {}, { protocols = { "generate" }, bench = name, template = template,
                                            max_new_tokens = cfg.max_response, batch_size = 64 }).generate.acc
        if k then
          -- S from sampled answers: avg@k at the training temperature (RL raises it where greedy
          -- answers barely move); the greedy score stays logged, its items feed the ensembles
          lt.run.log("score/" .. bench .. "/greedy", acc)
          acc = lt.eval.score(m, items, {}, { protocols = { "generate" }, bench = name .. "_avg",
                                              template = template, samples = k,
                                              temperature = cfg.score_temperature or 1.0,
                                              max_new_tokens = cfg.max_response, batch_size = 64 }).generate.avg_at_k
        end
      elseif kind == "ifeval" or kind == "mgsm" then
        -- read and scored by their task modules through lt.eval.run: IFEval's prompt-level strict
        -- accuracy of the first bench_limit items, MGSM's mean over languages of the first
        -- bench_limit items of each
        acc = lt.eval.run(m, spec, { limit = cfg.bench_limit, max_new_tokens = cfg.max_response })[kind].acc
      elseif kind == "humaneval" or kind == "mbpp" then
        acc = lt.eval.run(m, spec, { limit = cfg.bench_limit, protocols = { "code" }, seed = seed }).code.acc
      else
        local _, protocol = M.bench_name(bench)
        acc = lt.eval.run(m, bench, { limit = cfg.bench_limit, protocols = { protocol }, seed = seed })[protocol].acc
      end
      lt.run.log("score/" .. bench, acc)
      accs[bench] = acc
    end
    assert(next(accs), "--bench names no benchmark")
    return M.log_scores(accs, cfg.task)
  end

  -- the causal-LM trainer on the task's texts; o: lr_mult, checkpoint_dir, checkpoint_every,
  -- resume, stop_after
  function t.train_causal_lm(m, o)
    return lt.train.causal_lm(m, { data = t.training_data(), steps = cfg.steps, lr = o.lr or cfg.lr, warmup = cfg.warmup,
                                   seq_len = cfg.seq_len, micro_batch = cfg.micro_batch, weight_decay = 0.01,
                                   betas = { 0.9, 0.95 }, clip_grad = 1.0, lr_mult = o.lr_mult,
                                   checkpoint_dir = o.checkpoint_dir, checkpoint_every = o.checkpoint_every,
                                   resume = o.resume, stop_after = o.stop_after })
  end

  -- GRPO (or Dr. GRPO) with the math answer reward; cfg.steps batches of rollouts of
  -- cfg.prompts prompts x cfg.group_size samples, epochs x mini_batches optimizer steps each
  function t.train_grpo(m, o)
    local go = M.grpo_options(cfg)
    for k, v in pairs{ data = t.training_data(), template = M.math_template, iterations = cfg.steps, lr = o.lr or cfg.lr,
                       warmup = cfg.warmup, micro_batch = cfg.micro_batch, rewards = { math = 1.0 },
                       lr_mult = o.lr_mult, checkpoint_dir = o.checkpoint_dir, checkpoint_every = o.checkpoint_every,
                       resume = o.resume, stop_after = o.stop_after, decontaminate = 0 } do
      go[k] = v
    end
    return lt.rl.grpo(m, go)
  end

  -- self-consistency (§5.1): k samples of the model per item of the first math benchmark in
  -- one evaluation call (logged as eval_items of bench "<bench>_sc", item ids "ID#s"), the
  -- majority answer scored; logs `self_consistency` and returns it (nil without a math bench)
  function t.self_consistency(m, k, temperature)
    local bench = cfg.bench:match("^[^,]+")
    local items = math_items(bench)
    if not items or k < 1 then return nil end
    if #items > cfg.bench_limit then
      local cut = {}
      for i = 1, cfg.bench_limit do cut[i] = items[i] end
      items = cut
    end
    local acc = math_task.self_consistency(m, items, { bench = M.bench_name(bench) .. "_sc", samples = k,
      temperature = temperature, template = bench == "math_heldout" and M.math_template or nil,
      max_response = cfg.max_response })
    lt.run.log("self_consistency", acc)
    lt.run.param{ self_consistency_k = k, self_consistency_temperature = temperature }
    return acc
  end

  -- the training function of cfg.algo
  function t.trainer()
    if M.is_rl(cfg.algo) then
      if not lt.rl then error(("--algo=%s needs lt.rl, which this build does not have"):format(cfg.algo), 0) end
      local path = cfg.data == "math" and (cfg.model .. "/train.jsonl") or cfg.data
      local f = io.open(path)
      if f then f:close() end
      if not f then
        error(("--data=%s: no prompt file %s (GRPO reads a JSONL prompt file, or with `math` the model "
               .. "folder's train.jsonl as experiments/pretrain_math/pretrain_math.lua writes it)"):format(cfg.data, path), 0)
      end
      return t.train_grpo
    end
    if cfg.algo ~= "causal_lm" then error(("--algo=%s: expected causal_lm, grpo or dr_grpo"):format(cfg.algo), 0) end
    if cfg.data ~= "antonyms" then
      error(("--data=%s: the causal-LM scan task knows `antonyms` only"):format(cfg.data), 0)
    end
    return t.train_causal_lm
  end

  -- trains m with `o` (lr: instead of cfg.lr; lr_mult; checkpoint_dir, checkpoint_every, resume:
  -- the job's own checkpoints, see study.checkpoints); with cfg.eval_every > 0 scores it every so
  -- many steps and logs the best score as S (best checkpoint by score), else scores it once at the
  -- end
  function t.train_and_score(m, o)
    o = o or {}
    local fn = t.trainer()
    if (cfg.eval_every or 0) <= 0 then
      fn(m, o)
      return t.score(m)
    end
    if o.checkpoint_dir then
      -- the scores of the evaluations before a resume would be lost with the process
      error("--eval_every with checkpoints of the jobs (--checkpoint_every / --checkpoint_dir): "
            .. "not supported together; leave one of them off", 0)
    end
    local dir = ("%s/ckpt/%d"):format(cfg.work, lt.run.id())
    mkdir(dir)  -- marked as ltrun's, so that remove_tree below may delete it
    local best, best_step = -math.huge, 0
    for stop = cfg.eval_every, cfg.steps + cfg.eval_every - 1, cfg.eval_every do
      local at = math.min(stop, cfg.steps)
      -- the first stretch starts afresh (resume with no checkpoint is an error), the others
      -- continue from the checkpoint the one before wrote at its stop_after
      fn(m, { lr = o.lr, lr_mult = o.lr_mult, checkpoint_dir = dir, checkpoint_every = cfg.eval_every,
              resume = lt.train.latest_checkpoint(dir) ~= nil, stop_after = at })
      local s = t.score(m)
      lt.run.log("score_at", s, { step = at })
      if s > best then best, best_step = s, at end
    end
    lt.run.log("score", best)
    lt.run.param("best_step", best_step)
    require("lt.scan.workers").remove_tree(dir)
    return best
  end

  -- The job's checkpoints (cfg.checkpoint_every = N or cfg.checkpoint_dir = DIR; default
  -- folder WORK/ckpt): DIR/<scan key>/<job>, so that a job run again (--resume=true after a
  -- crash or a kill) continues from its last checkpoint instead of step 0.
  local function job_checkpoints(job, key)
    if (cfg.checkpoint_every or 0) <= 0 and (cfg.checkpoint_dir or "") == "" then return {} end
    local dir = ("%s/%s/%s"):format(cfg.checkpoint_dir ~= "" and cfg.checkpoint_dir or (cfg.work .. "/ckpt"),
                                    (key:gsub("[^%w_.-]", "_")), job)
    local latest = lt.train.latest_checkpoint(dir)
    if latest then
      lt.run.param("resumed_from", latest)
      io.stderr:write(("%s: continuing from %s\n"):format(job, latest))
    end
    return { checkpoint_dir = dir, checkpoint_every = cfg.checkpoint_every > 0 and cfg.checkpoint_every or nil,
             resume = latest ~= nil }
  end

  -- One job of a scan, in its worker process (the run is already the child base / full /
  -- layer_<l>): scores the base, or trains every block (full) or one block and scores it; the
  -- full GRPO job also scores self-consistency (cfg.sc samples); logs the weight change.
  function t.run_job(job, key)
    lt.run.param("scan_key", key)
    local base = lt.model.load(cfg.model)
    if job == "base" then return t.score(base) end
    local m = base:clone()
    local j = require("lt.scan.workers").job_of(job)
    local sweep, l = j.sweep, j.layer
    if sweep then  -- one learning rate of --lr_sweep: every block trained at it, its reported score S
      local lr = M.sweep_lrs(cfg)[sweep] or error(("--job=%s: --lr_sweep has no rate %d"):format(job, sweep), 0)
      lt.run.param{ job_lr = lr, trainable = "all" }
      m:train_only("all")
      return t.train_and_score(m, { lr = lr })
    end
    if not l and job ~= "full" then error(("--job=%s: expected base, full, layer_<l> or sweep_<i>"):format(job), 0) end
    m:train_only(l or "all")
    lt.run.param("trainable", l and ("block " .. l) or "all")
    local o = job_checkpoints(job, key)
    if l and (cfg.layer_lr or 0) > 0 then o.lr = cfg.layer_lr end  -- the blocks' own learning rate
    lt.run.param("job_lr", o.lr or cfg.lr)
    -- a full run is S_full for every scan with its settings whatever the blocks' lr (full_key)
    if job == "full" then lt.run.param("full_key", require("lt.scan.contributions").scan_key(cfg, true)) end
    local s = t.train_and_score(m, o)
    if job == "full" and M.is_rl(cfg.algo) and (cfg.sc or 0) > 0 then t.self_consistency(m, cfg.sc, cfg.sc_temperature) end
    lt.train.weight_change(m, base, { log = "weight_change" })
    m:free()
    return s
  end

  -- code and agent: their own data, training and S (lt.scan.task.code, lt.scan.task.agent)
  if cfg.task == "code" or cfg.task == "agent" then require("lt.scan.task." .. cfg.task).extend(cfg, t) end
  return t
end

return M

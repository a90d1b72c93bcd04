-- lt/tasks/eval.lua (the Lua half of lt.eval): lt.eval.run(model, spec, opts), the one call a study
-- makes to score a model. spec: "ceval:DIR" (scores val, as the paper), "cmmlu:DIR" (test),
-- "mmlu:DIR" (test), "gsm8k:FILE", "math:FILE", "mc:FILE" (generic JSONL multiple choice),
-- "humaneval:FILE" and "mbpp:FILE" (code: protocol "code", tests run in lt.sandbox, M.run_code),
-- "ifeval:FILE" and "mgsm:FILE|DIR" (read and scored by lt.tasks.ifeval / lt.tasks.mgsm), or
-- a built-in name: "antonyms" and "antonyms_heldout" (WordNet adjective antonyms as 4-way multiple
-- choice: no download needed). opts: split, limit (first N items), shots (k-shot from dev),
-- protocols ({"logit", "generate"} by default; "cloze": each option scored as a continuation, see
-- runtime/eval/harness.h), batch_size, max_new_tokens, samples + temperature (math: avg@k, pass@k),
-- seed. Returns summary[protocol] = {acc, n, correct, by_category, by_subject[, avg_at_k,
-- pass_at_k]} plus summary.items (every prediction); everything is logged to the current run.
-- Where each half of lt.eval lives: C++ (runtime/eval/script.cpp, registered by bindings/eval.cpp):
-- lt.eval.load, score, prompt, extract_choice, contains_option, extract_math, equivalent, vote,
-- pass_at_k; Lua (this file, loaded by the prelude lib/lt/init.lua): lt.eval.run and items (the
-- benchmark specs and built-ins), solved, newly_solved, vote_runs, vote_items.
local M = {}

local formats = { ceval = "ceval", cmmlu = "cmmlu", mmlu = "mmlu", gsm8k = "gsm8k",
                  math = "math500", mc = "mcq" }
local default_split = { ceval = "val", cmmlu = "test", mmlu = "test" }

local builtins = {}

-- Benchmarks whose own task module (lib/lt/tasks/KIND.lua) reads, prompts and scores them, as
-- lt.eval.run asks them: KIND:PATH; opts: limit (the first N items; MGSM: of each language),
-- max_new_tokens, batch_size, bench, and IFEval's unsupported ("error" | "drop"). Each returns
-- {[KIND] = {acc, n, ...}, items}: IFEval's acc is the strict prompt-level accuracy, MGSM's the
-- mean over languages (acc_macro).
local tasked = {}

function tasked.ifeval(model, path, o)
  local ifeval = require "lt.tasks.ifeval"
  lt.check_options(o, "lt.eval.run ifeval", { "limit", "max_new_tokens", "batch_size", "bench", "unsupported" })
  local items = ifeval.read(path, { unsupported = o.unsupported })
  for i = #items, (o.limit or #items) + 1, -1 do items[i] = nil end
  local r = ifeval.evaluate(model, items, { max_new_tokens = o.max_new_tokens, batch_size = o.batch_size,
                                            bench = o.bench })
  return { ifeval = { acc = r.strict.prompt_acc, n = #items, strict = r.strict, loose = r.loose }, items = r.items }
end

function tasked.mgsm(model, path, o)
  local mgsm = require "lt.tasks.mgsm"
  lt.check_options(o, "lt.eval.run mgsm", { "limit", "max_new_tokens", "batch_size", "bench" })
  local per, kept = {}, {}
  for _, it in ipairs(mgsm.read(path)) do
    per[it.language] = (per[it.language] or 0) + 1
    if per[it.language] <= (o.limit or math.huge) then kept[#kept + 1] = it end
  end
  local r = mgsm.score(model, kept, { max_new_tokens = o.max_new_tokens, batch_size = o.batch_size, bench = o.bench })
  r.acc_micro, r.acc = r.acc, r.acc_macro
  return { mgsm = r, items = r.items }
end

-- "Which word means the opposite of "hot"?" with the antonym and three other adjectives,
-- on WordNet's everyday antonym pairs (lt.tasks.wordnet_antonyms). Two built-ins:
--   antonyms          the train side of lt.tasks.split_pairs: pairs the default tiny base
--                     model was taught (experiments/pretrain_tiny/pretrain_tiny.lua), asked in fresh items
--                     (seed opts.seed, default 1; pretraining used seeds 201.. and drops
--                     any item of the benchmark from its data): does the model still know them?
--   antonyms_heldout  the test side: pairs the default model read only as plain statements,
--                     never in a task or benchmark format: does it generalise?
-- opts.n items (default 200, at most one per pair).
function builtins.antonyms(opts)
  local tasks = require "lt.tasks"
  return tasks.choice_items(tasks.wordnet_antonyms("train"), { n = opts.n, seed = opts.seed })
end

function builtins.antonyms_heldout(opts)
  local tasks = require "lt.tasks"
  local items = tasks.choice_items(tasks.wordnet_antonyms("test"), { n = opts.n, seed = opts.seed })
  for _, it in ipairs(items) do it.id = it.id:gsub("^antonyms/", "antonyms_heldout/") end
  return items
end

-- The items of a built-in benchmark (antonyms, antonyms_heldout), as lt.eval.run asks them.
function M.items(name, opts)
  lt.check_options(opts, "lt.eval.items", { "n", "seed" })
  local make = builtins[name]
  if not make then error(("lt.eval.items: unknown built-in benchmark '%s' (antonyms, antonyms_heldout)"):format(tostring(name)), 2) end
  return make(opts or {})
end

function M.run(model, spec, opts)
  opts = opts or {}
  assert(type(spec) == "string", "lt.eval.run: argument 2: expected a benchmark spec string")
  -- limit = 0 or -1 used to "succeed" with zero items
  local lim = opts.limit
  if lim ~= nil and (type(lim) ~= "number" or lim < 1 or lim % 1 ~= 0) then
    error(("lt.eval.run: option limit: expected a positive integer, got %s"):format(tostring(lim)), 2)
  end
  local items, pool, bench
  local kind, path = spec:match("^(%w+):(.+)$")
  if kind == "humaneval" or kind == "mbpp" then return M.run_code(model, kind, path, opts) end
  if kind and tasked[kind] then return tasked[kind](model, path, opts) end
  if kind then
    local format = formats[kind]
    if not format then
      error(("lt.eval.run: unknown benchmark kind '%s' in '%s' (ceval, cmmlu, mmlu, gsm8k, math, mc, humaneval, mbpp, ifeval, mgsm)"):format(kind, spec), 2)
    end
    pool = lt.eval.load(format, path)
    local split = opts.split or default_split[kind]
    if split then
      items = {}
      for _, it in ipairs(pool) do if it.split == split then items[#items + 1] = it end end
      if #items == 0 then error(("lt.eval.run: %s has no items in split '%s'"):format(spec, split), 2) end
    else
      items = pool
    end
    bench = kind
  elseif builtins[spec] then
    items, bench = builtins[spec]({ n = opts.n, seed = opts.seed }), spec
    pool = {}
  else
    error(("lt.eval.run: unknown benchmark '%s' (KIND:PATH with KIND one of ceval, cmmlu, mmlu, gsm8k, math, mc, humaneval, mbpp, ifeval, mgsm; or a built-in: antonyms, antonyms_heldout)"):format(spec), 2)
  end
  if opts.limit and opts.limit < #items then
    local cut = {}
    for i = 1, opts.limit do cut[i] = items[i] end
    items = cut
  end
  -- the rest goes to lt.eval.score, which refuses keys it does not know (a misspelled option
  -- is an error, not ignored); limit and split are this function's, n the built-ins'
  local o = {}
  for k, v in pairs(opts) do
    if k ~= "limit" and k ~= "split" and not (k == "n" and builtins[spec]) then o[k] = v end
  end
  o.bench = bench
  return lt.eval.score(model, items, pool, o)
end

-- Code benchmarks ("humaneval:FILE" for HumanEval / EvalPlus JSONL, "mbpp:FILE"): the one
-- protocol "code" (generate, extract the code, run the tests in lt.sandbox), by
-- lt.tasks.code.score; opts: limit, protocols ({"code"}), samples, temperature, k, tests
-- ("base" | "plus"), max_new_tokens, batch_size, seed, timeout, memory_mb, workers.
-- Predictions are logged as metrics (BENCH/code/acc, avg_at_k, pass@k), not as eval_items rows.
function M.run_code(model, kind, path, opts)
  local code = require "lt.tasks.code"
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  if o.protocols ~= nil then
    if type(o.protocols) ~= "table" or #o.protocols ~= 1 or o.protocols[1] ~= "code" then
      error(("lt.eval.run: %s:%s has the one protocol \"code\""):format(kind, path), 3)
    end
    o.protocols = nil
  end
  local items = code.read(path, { format = kind })
  if o.limit and o.limit < #items then for i = #items, o.limit + 1, -1 do items[i] = nil end end
  o.limit, o.bench = nil, o.bench or kind
  return code.score(model, items, o)
end

-- The ids a run answered correctly on one benchmark and protocol: a set {id = true}.
function M.solved(run_id, bench, protocol)
  local set = {}
  for _, r in ipairs(lt.run.query(
      "SELECT item_id FROM eval_items WHERE run_id = ? AND bench = ? AND protocol = ? AND correct = 1",
      run_id, bench, protocol or "logit")) do
    set[r.item_id] = true
  end
  return set
end

-- Ids in `model` and not in `base` (sets as from lt.eval.solved).
function M.newly_solved(base, model)
  local out = {}
  for id in pairs(model) do if not base[id] then out[id] = true end end
  return out
end

-- The one majority vote over lists of answers: preds = {id = {answer of voter 1, 2, ...}}
-- (a missing or empty answer abstains), items = {{id =, answer =}} in order (items without an
-- answer are voted but not scored). Each item's answers go to lt.eval.vote (compare "exact" or
-- "math": equivalent answers count together; ties go to the earliest voter among the tied
-- answers). → {acc, n, correct, items = {id = voted answer}}
function M.vote_items(preds, items, compare)
  local voted, correct, n = {}, 0, 0
  for _, it in ipairs(items) do
    local list = preds[it.id] or {}
    for i = 1, table.maxn(list) do list[i] = list[i] or "" end
    local answer = #list > 0 and lt.eval.vote(list, { compare = compare or "exact" }) or ""
    voted[it.id] = answer
    if it.answer and it.answer ~= "" then
      n = n + 1
      local same = compare == "math" and lt.eval.equivalent(answer, it.answer) or answer == it.answer
      if answer ~= "" and same then correct = correct + 1 end
    end
  end
  return { acc = n > 0 and correct / n or 0, n = n, correct = correct, items = voted }
end

-- Majority vote of several runs (e.g. models each trained on one layer) on the same items:
-- lt.eval.vote_runs{runs = {12, 13, 14}, bench = "gsm8k", protocol = "generate",
-- compare = "math"} → {acc, n, items = {id = answer}} (lt.eval.vote_items, one voter per run).
function M.vote_runs(o)
  lt.check_options(o, "lt.eval.vote_runs", { "runs", "bench", "protocol", "compare" })
  assert(type(o) == "table" and type(o.runs) == "table" and #o.runs > 0, "lt.eval.vote_runs: runs = {run ids} is required")
  local protocol = o.protocol or "logit"
  local preds, items = {}, {}
  for k, run in ipairs(o.runs) do
    local rows = lt.run.query(
        "SELECT item_id, prediction, answer FROM eval_items WHERE run_id = ? AND bench = ? AND protocol = ? AND item_id NOT LIKE '%#%'",
        run, o.bench, protocol)
    if #rows == 0 then error(("lt.eval.vote_runs: run %s has no %s/%s items"):format(run, o.bench, protocol), 2) end
    for _, r in ipairs(rows) do
      if not preds[r.item_id] then preds[r.item_id] = {}; items[#items + 1] = { id = r.item_id, answer = r.answer } end
      preds[r.item_id][k] = r.prediction or ""
    end
  end
  return M.vote_items(preds, items, o.compare)
end

return M

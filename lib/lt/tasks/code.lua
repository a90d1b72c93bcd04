-- lt/tasks/code.lua: code tasks and their rewards, run in lt.sandbox: readers for HumanEval /
-- EvalPlus JSONL ({task_id, prompt, canonical_solution, test, entry_point}; EvalPlus adds
-- base_input / plus_input / atol: the base and plus tests, expected outputs from the canonical
-- solution) and MBPP JSONL ({task_id, text, code, test_list, test_setup_code,
-- challenge_test_list}); the code of a model's response (a ```python block, or the raw
-- completion appended to the prompt as HumanEval does); the test program; the reward (share
-- of tests passed, or 1 when all pass); pass@k (the unbiased estimator); code.score (the
-- shape of lt.eval.score's results) and a reward function for lt.rl.grpo.
--   local code = require "lt.tasks.code"
--   local items = code.read("HumanEval.jsonl")               -- errors name file:line
--   local r = code.run(items[1], response)                    -- {passed, total, reward, all, status, ...}
--   lt.rl.grpo(m, { data = code.prompts(items), template = "{question}",
--                   rewards = { code = code.reward_fn(items) }, ... })
-- The programs run in the sandbox only: where lt.sandbox.available() is false, code.run
-- refuses (lt.sandbox.run's own refusal), never running a program unsandboxed.
local M = {}

-- HumanEval's stop sequences for a raw completion (Codex paper): the function ends where a
-- line starts at column 0
M.stop = { "\nclass", "\ndef", "\n#", "\nif", "\nprint" }

-- ---- readers --------------------------------------------------------------------------------------
local function is_list(v) return type(v) == "table" and (#v > 0 or next(v) == nil) end
local function strings(v)
  if not is_list(v) then return false end
  for _, s in ipairs(v) do if type(s) ~= "string" then return false end end
  return true
end

-- the function a test list calls (MBPP's asserts are "assert NAME(...) == ..."): the first called
-- name, not a builtin, that the code defines; else the first called; else the code's first def
local builtin = { set = true, sorted = true, abs = true, round = true, len = true, list = true, tuple = true,
                  str = true, int = true, float = true, isclose = true, math = true }
local function called(tests, code)
  local first
  for _, t in ipairs(tests) do
    for name in t:gmatch("([%a_][%w_%.]*)%s*%(") do  -- calls in order; a.b( is a method or module call
      if not name:find(".", 1, true) and not builtin[name] and name ~= "assert" then
        if code and code:find("def%s+" .. name .. "%s*%(") then return name end
        first = first or name
      end
    end
  end
  return first or (code and code:match("def%s+([%a_][%w_]*)%s*%(")) or nil
end

-- One JSON line → an item, or an error naming where. format: "humaneval" | "mbpp" | nil (by
-- the line's fields: test_list makes it MBPP).
local function item_of(row, where, format, line)
  local function bad(what) error(("%s: %s"):format(where, what), 0) end
  if type(row) ~= "table" or is_list(row) and next(row) ~= nil then bad("expected a JSON object") end
  local id = row.task_id
  if type(id) == "number" then id = ("%d"):format(id) end
  if type(id) ~= "string" or id == "" then bad("no task_id (a string or number)") end
  local mbpp = format == "mbpp" or (format == nil and row.test_list ~= nil)
  local it = { id = id, source = where }
  if mbpp then
    if type(row.text) ~= "string" then bad(("task %s: no text (MBPP's problem statement)"):format(id)) end
    if not strings(row.test_list) or #row.test_list == 0 then bad(("task %s: no test (test_list: a list of assert lines)"):format(id)) end
    if row.code ~= nil and type(row.code) ~= "string" then bad(("task %s: code: expected a string"):format(id)) end
    if row.challenge_test_list ~= nil and not strings(row.challenge_test_list) then
      bad(("task %s: challenge_test_list: expected a list of strings"):format(id))
    end
    it.format, it.canonical, it.tests = "mbpp", row.code, row.test_list
    it.plus_tests = row.challenge_test_list or {}
    it.setup = type(row.test_setup_code) == "string" and row.test_setup_code or ""
    it.entry_point = type(row.entry_point) == "string" and row.entry_point or called(row.test_list, row.code)
    if not it.entry_point then bad(("task %s: no entry_point (no function named in test_list)"):format(id)) end
    -- the prompt of MBPP+ (EvalPlus): the problem and its first test in a docstring
    it.prompt = ('"""\n%s\n%s\n"""\n'):format(row.text, row.test_list[1])
  else
    if type(row.prompt) ~= "string" then bad(("task %s: no prompt"):format(id)) end
    if type(row.entry_point) ~= "string" or not row.entry_point:match("^[%a_][%w_]*$") then
      bad(("task %s: no entry_point (the name of the function the test checks)"):format(id))
    end
    local inputs = row.base_input ~= nil
    if inputs and not is_list(row.base_input) then bad(("task %s: base_input: expected a list of argument lists"):format(id)) end
    if row.plus_input ~= nil and not is_list(row.plus_input) then bad(("task %s: plus_input: expected a list of argument lists"):format(id)) end
    if not inputs and (type(row.test) ~= "string" or not row.test:find("def%s+check%s*%(")) then
      bad(("task %s: no test (a string defining check(candidate), or EvalPlus's base_input)"):format(id))
    end
    if row.canonical_solution ~= nil and type(row.canonical_solution) ~= "string" then
      bad(("task %s: canonical_solution: expected a string"):format(id))
    end
    if inputs and type(row.canonical_solution) ~= "string" then
      bad(("task %s: base_input without canonical_solution (the expected outputs come from it)"):format(id))
    end
    if row.atol ~= nil and (type(row.atol) ~= "number" or row.atol < 0) then bad(("task %s: atol: expected a number >= 0"):format(id)) end
    it.format, it.prompt, it.entry_point, it.canonical = "humaneval", row.prompt, row.entry_point, row.canonical_solution
    it.test = type(row.test) == "string" and row.test or nil
    if inputs then
      it.inputs = { base = #row.base_input, plus = is_list(row.plus_input) and #row.plus_input or 0 }
      it.raw = line  -- the inputs go to the sandbox as JSON, untouched by Lua
    end
  end
  return it
end

-- The items of a HumanEval / EvalPlus / MBPP JSONL file, in file order. opts.format:
-- "humaneval" | "mbpp" (default: by each line's fields). A line that is not a JSON object or
-- lacks what its format needs, and a repeated task_id, are errors naming file:line.
function M.read(path, opts)
  lt.check_options(opts, "lt.tasks.code.read", { "format" })
  local format = opts and opts.format
  if format ~= nil and format ~= "humaneval" and format ~= "mbpp" then
    error(("lt.tasks.code.read: format '%s': expected humaneval or mbpp"):format(tostring(format)), 2)
  end
  if type(path) ~= "string" then error(("lt.tasks.code.read: path: expected a string, got %s"):format(type(path)), 2) end
  local f, err = io.open(path)
  local text
  if f then text, err = f:read("*a"); f:close() end  -- whole, so that a NUL byte stays in its line
  if not text then error(("lt.tasks.code.read: cannot read %s (%s)"):format(path, tostring(err)), 2) end
  local items, seen, n = {}, {}, 0
  for line in (text:sub(-1) == "\n" and text or text .. "\n"):gmatch("(.-)\r?\n") do
    n = n + 1
    if line:find("%S") then
      local where = ("%s:%d"):format(path, n)
      if line:find("%z") then error(("%s: not JSON (a NUL byte at column %d)"):format(where, line:find("%z")), 0) end
      local ok, row = pcall(lt.json.decode, line)  -- (which would read up to a NUL only)
      if not ok then error(("%s: not JSON (%s)"):format(where, tostring(row)), 0) end
      local good, it = pcall(item_of, row, where, format, line)
      if not good then error(it, 0) end
      if seen[it.id] then error(("%s: task_id %s repeats line %d"):format(where, it.id, seen[it.id]), 0) end
      seen[it.id] = n
      items[#items + 1] = it
    end
  end
  if #items == 0 then error(("lt.tasks.code.read: %s has no tasks"):format(path), 2) end
  return items
end

-- ---- the code of a response -----------------------------------------------------------------------
-- The code a response gives for item `it`, and how it completes the prompt: the first
-- ```python (or ```py, or bare ```) block when there is one (an unclosed block runs to the
-- end), else the raw completion cut at HumanEval's stop sequences. Code that defines the
-- entry point stands alone (the prompt's imports before it); other code continues the
-- prompt. → solution (the program that defines the function), code (what was extracted)
function M.extract(it, response)
  if type(response) ~= "string" then error(("lt.tasks.code: task %s: response: expected a string, got %s"):format(tostring(it.id), type(response)), 2) end
  local code = response:match("```[Pp]ython3?[ \t]*\r?\n(.-)```") or response:match("```[Pp]y[ \t]*\r?\n(.-)```")
    or response:match("```[ \t]*\r?\n(.-)```") or response:match("```[%w]*[ \t]*\r?\n(.*)$")
  if not code then
    code = response
    local cut = #code + 1
    for _, s in ipairs(M.stop) do
      local at = code:find(s, 1, true)
      if at and at < cut then cut = at end
    end
    code = code:sub(1, cut - 1)
  end
  local defines = code:find("^def%s+" .. it.entry_point .. "%s*%(") or code:find("\ndef%s+" .. it.entry_point .. "%s*%(")
  if it.format == "mbpp" or defines then
    local imports = {}
    if it.format ~= "mbpp" then
      for l in (it.prompt .. "\n"):gmatch("(.-)\r?\n") do
        if l:match("^import%s") or l:match("^from%s+[%w_%.]+%s+import%s") then imports[#imports + 1] = l end
      end
    end
    return (#imports > 0 and table.concat(imports, "\n") .. "\n" or "") .. code, code
  end
  return it.prompt .. code, code
end

-- The plain test program of HumanEval: prompt + completion + test + check(entry_point)
-- (MBPP: the code, its setup and its asserts; EvalPlus inputs: the original test when the
-- line has one). Exit 0 means every test passed. code.run uses the instrumented driver below,
-- which counts the tests one by one.
function M.program(it, response)
  local solution = M.extract(it, response)
  if it.format == "mbpp" then
    return table.concat({ solution, it.setup, table.concat(it.tests, "\n") }, "\n\n") .. "\n"
  end
  if not it.test then error(("lt.tasks.code.program: %s: task %s has no test field (EvalPlus inputs only: use code.run)"):format(it.source, it.id), 2) end
  return ("%s\n\n%s\n\ncheck(%s)\n"):format(solution, it.test, it.entry_point)
end

-- ---- running the tests ----------------------------------------------------------------------------
-- The driver, run in the sandbox, reads one line of JSON (the solution, the test kind and its
-- data; for EvalPlus the task's own JSON line follows) and prints `MARK passed failed` after
-- each test, and `MARK passed failed end` when it finished: a timeout keeps the tests counted
-- so far. The program's own output goes to /dev/null. A program runs in the driver's process,
-- as EvalPlus's do: a program written to forge the mark could (it is a reward for models, not
-- a defence against an adversary beyond the sandbox's walls).
M.driver = [=[
import ast, copy, json, math, os, sys
spec = json.loads(sys.stdin.readline())
task = json.loads(sys.stdin.readline() or "null")
out, mark = sys.stdout, spec["mark"]
counts = [0, 0]
def report(end=""):
    out.write("\n%s %d %d %s\n" % (mark, counts[0], counts[1], end)); out.flush()
def ok(): counts[0] += 1; report()
def bad(): counts[1] += 1; report()
sys.stdout = open(os.devnull, "w")
def load(src, name):
    g = {"__name__": "__main__"}
    exec(compile(src, name, "exec"), g)
    return g
try:
    g = load(spec["solution"], "solution.py")
    cand = g[spec["entry_point"]]
except BaseException as e:
    sys.stderr.write("solution: %r\n" % (e,)); report("end"); raise SystemExit(1)
class Count(ast.NodeTransformer):  # each assert counted: try: assert ... except: bad() else: ok()
    def visit_Assert(self, node):
        call = lambda f: ast.Expr(ast.Call(ast.Name(f, ast.Load()), [], []))
        return ast.Try([node], [ast.ExceptHandler(ast.Name("BaseException", ast.Load()), None, [call("__lt_bad")])],
                       [call("__lt_ok")], [])
def close(a, b, atol):
    if isinstance(a, bool) or isinstance(b, bool): return a == b
    if isinstance(a, float) or isinstance(b, float):
        try: return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-7, abs_tol=atol or 1e-6)
        except TypeError: return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and type(a) == type(b) and len(a) == len(b):
        return all(close(x, y, atol) for x, y in zip(a, b))
    return a == b
kind = spec["kind"]
try:
    if kind == "check":
        tree = ast.fix_missing_locations(Count().visit(ast.parse(spec["test"], "test.py")))
        g["__lt_ok"], g["__lt_bad"] = ok, bad
        exec(compile(tree, "test.py", "exec"), g)
        g["check"](cand)
    elif kind == "asserts":
        if spec["setup"]: exec(compile(spec["setup"], "setup.py", "exec"), g)
        for t in spec["tests"]:
            try: exec(compile(t, "test.py", "exec"), g)
            except BaseException: bad()
            else: ok()
    else:
        ref = load(spec["reference"], "reference.py")[spec["entry_point"]]
        cases = task["base_input"] + (task.get("plus_input") or [] if kind == "plus" else [])
        for args in cases:
            want = ref(*copy.deepcopy(args))
            try: same = close(cand(*copy.deepcopy(args)), want, task.get("atol") or 0)
            except BaseException: same = False
            ok() if same else bad()
except BaseException as e:
    sys.stderr.write("test: %r\n" % (e,)); bad(); report("end"); raise SystemExit(1)
report("end")
]=]

local serial = 0

-- The sandbox program (code + stdin) that tests `response` on item `it`; tests: "base"
-- (default) or "plus" (EvalPlus: base and plus inputs; MBPP: test_list and challenge_test_list)
function M.sandbox_program(it, response, tests)
  local solution = M.extract(it, response)
  serial = serial + 1
  local mark = ("__lt_tests_%d_%d__"):format(serial, #response)
  local spec = { solution = solution, entry_point = it.entry_point, mark = mark }
  local total
  if it.format == "mbpp" then
    spec.kind, spec.setup, spec.tests = "asserts", it.setup, {}
    for _, t in ipairs(it.tests) do spec.tests[#spec.tests + 1] = t end
    if tests == "plus" then for _, t in ipairs(it.plus_tests) do spec.tests[#spec.tests + 1] = t end end
    total = #spec.tests
  elseif it.inputs then
    spec.kind, spec.reference = tests == "plus" and "plus" or "base", it.prompt .. it.canonical
    total = it.inputs.base + (tests == "plus" and it.inputs.plus or 0)
  else
    spec.kind, spec.test = "check", it.test
  end
  return { code = M.driver, stdin = lt.json.encode(spec) .. "\n" .. (it.raw or "null") .. "\n" }, mark, total
end

-- What a sandbox result says: passed and failed tests (the last mark line), whether the driver
-- finished; total: the tests there are (nil for HumanEval's check(): the asserts it ran, plus one
-- for a run that ended before the driver's last mark; counts that do not add up to a known total
-- count as none passed). reward = passed / total ("share"), all = 1 when every test passed and the
-- run finished.
function M.outcome(res, mark, total)
  local passed, failed, ended = 0, 0, false
  for p, f, e in res.stdout:gmatch(mark .. " (%d+) (%d+) ?(%a*)") do
    passed, failed, ended = tonumber(p), tonumber(f), e == "end"
  end
  passed, failed = tonumber(passed), tonumber(failed)
  local n = total or (passed + failed + (ended and 0 or 1))  -- the driver counts a crash of check() as a fail
  if total and (passed + failed > total or ended and passed + failed ~= total) then
    passed, failed = 0, total  -- counts that do not add up to the tests there are: not trusted
  end
  local all = (ended and res.status == "ok" and failed == 0 and passed == n and n > 0) and 1 or 0
  return { passed = passed, failed = failed, total = n, reward = n > 0 and passed / n or 0, all = all,
           status = res.status, stderr = res.stderr, wall = res.wall }
end

local function sandbox_opts(o)
  return { timeout = o and o.timeout or 10, memory_mb = o and o.memory_mb or 1024 }
end

-- Tests `response` on item `it` in the sandbox → M.outcome's table. opts: tests ("base" |
-- "plus"), timeout (seconds, default 10), memory_mb (default 1024).
function M.run(it, response, opts)
  lt.check_options(opts, "lt.tasks.code.run", { "tests", "timeout", "memory_mb" })
  local prog, mark, total = M.sandbox_program(it, response, opts and opts.tests)
  local so = sandbox_opts(opts)
  prog.timeout, prog.memory_mb = so.timeout, so.memory_mb
  return M.outcome(lt.sandbox.run(prog), mark, total)
end

-- Many at once: cases = {{item, response}, ...} → outcomes in order (lt.sandbox.run_many;
-- opts as code.run's plus workers). The same (item, code) pair runs once.
function M.run_many(cases, opts)
  lt.check_options(opts, "lt.tasks.code.run_many", { "tests", "timeout", "memory_mb", "workers" })
  local so = sandbox_opts(opts)
  local progs, marks, totals, slot, first = {}, {}, {}, {}, {}
  for i, c in ipairs(cases) do
    local key = c[1].id .. "\0" .. M.extract(c[1], c[2])
    if first[key] then
      slot[i] = first[key]
    else
      local prog, mark, total = M.sandbox_program(c[1], c[2], opts and opts.tests)
      prog.timeout, prog.memory_mb = so.timeout, so.memory_mb
      progs[#progs + 1], marks[#progs + 1], totals[#progs + 1] = prog, mark, total
      first[key], slot[i] = #progs, #progs
    end
  end
  local res = #progs > 0 and lt.sandbox.run_many(progs, { workers = opts and opts.workers }) or {}
  local out = {}
  for i = 1, #cases do out[i] = M.outcome(res[slot[i]], marks[slot[i]], totals[slot[i]]) end
  return out
end

-- ---- pass@k -----------------------------------------------------------------------------------
-- The unbiased estimator of pass@k from n samples of which c pass (Chen et al. 2021):
-- 1 - C(n-c, k) / C(n, k), as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which never forms a binomial
-- coefficient (C(2000, 1000) is past a double's range).
function M.pass_at_k(n, c, k)
  for name, v in pairs{ n = n, c = c, k = k } do
    if type(v) ~= "number" or v ~= math.floor(v) or v < 0 then
      error(("lt.tasks.code.pass_at_k: %s = %s: expected a whole number >= 0"):format(name, tostring(v)), 2)
    end
  end
  if k < 1 or k > n or c > n then error(("lt.tasks.code.pass_at_k: need 1 <= k <= n and c <= n (n = %d, c = %d, k = %d)"):format(n, c, k), 2) end
  if n - c < k then return 1.0 end
  local prod = 1.0
  for i = n - c + 1, n do prod = prod * (1 - k / i) end
  return 1 - prod
end

-- ---- rewards and scores -------------------------------------------------------------------------
-- The prompts of items for lt.rl.grpo (data =, with template = "{question}"): {id, question =
-- prompt}
function M.prompts(items)
  local out = {}
  for i, it in ipairs(items) do out[i] = { id = it.id, question = it.prompt, answer = "" } end
  return out
end

-- A reward function for lt.rl.grpo's rewards (fn(item, response) -> number): the item's tests
-- run in the sandbox on the response; o.mode "share" (default: the share of tests passed) or
-- "all" (1 when every test passes), o.tests, o.timeout, o.memory_mb as code.run's. The same
-- (task, code) pair is run once (a group's samples often repeat).
function M.reward_fn(items, o)
  lt.check_options(o, "lt.tasks.code.reward_fn", { "mode", "tests", "timeout", "memory_mb" })
  o = o or {}
  local mode = o.mode or "share"
  if mode ~= "share" and mode ~= "all" then error(("lt.tasks.code.reward_fn: mode '%s': expected share or all"):format(mode), 2) end
  local by_id, cache = {}, {}
  for _, it in ipairs(items) do by_id[it.id] = it end
  return function(item, response)
    local it = by_id[item.id] or error(("lt.tasks.code reward: no task %s"):format(tostring(item.id)), 0)
    local key = it.id .. "\0" .. M.extract(it, response)
    if not cache[key] then
      cache[key] = M.run(it, response, { tests = o.tests, timeout = o.timeout, memory_mb = o.memory_mb })
    end
    return mode == "all" and cache[key].all or cache[key].reward
  end
end

-- Scores a model on code items: `samples` responses per item (greedy when temperature is 0,
-- else sampled at `temperature`, seed: the run's "eval" stream), each tested in the sandbox.
-- Returns what lt.eval.score does: {code = {acc, n, correct, by_category = {}, by_subject = {},
-- avg_at_k, pass_at_k, k (with samples > 1), reward (mean share of tests)}, items = {{id,
-- protocol = "code", prediction (the code), output (the response), correct (all tests pass),
-- sample, passed, total, status}}}; logs BENCH/code/acc (and avg@k, pass@K) to the run.
-- acc: the share of items whose first answer passes; avg_at_k: pass@1 over every sample;
-- pass_at_k at k (default: samples), the unbiased estimator. Also .per = {right answers per item}.
function M.score(model, items, opts)
  opts = opts or {}
  lt.check_options(opts, "lt.tasks.code.score", { "samples", "temperature", "k", "max_new_tokens", "batch_size",
                                                   "bench", "tests", "timeout", "memory_mb", "workers", "seed", "stop" })
  local samples, temperature = opts.samples or 1, opts.temperature or 0
  local k = opts.k or samples
  if samples < 1 or k < 1 or k > samples then error(("lt.tasks.code.score: need 1 <= k <= samples (k = %s, samples = %s)"):format(k, samples), 2) end
  local prompts, owner = {}, {}
  for i, it in ipairs(items) do
    for s = 0, samples - 1 do prompts[#prompts + 1], owner[#prompts + 1] = it.prompt, { i, s } end
  end
  local seed = opts.seed or lt.run.seed("eval")
  local bs, responses = opts.batch_size or 64, {}
  for b = 1, #prompts, bs do
    local chunk = {}
    for j = b, math.min(b + bs - 1, #prompts) do chunk[#chunk + 1] = prompts[j] end
    local outs = model:generate(chunk, { max_new_tokens = opts.max_new_tokens or 128, temperature = temperature,
                                         seed = seed + (b - 1) / bs, stop = opts.stop or M.stop })
    for j, o in ipairs(outs) do responses[b + j - 1] = o end
  end
  local cases = {}
  for j, r in ipairs(responses) do cases[j] = { items[owner[j][1]], r } end
  local res = M.run_many(cases, { tests = opts.tests, timeout = opts.timeout, memory_mb = opts.memory_mb, workers = opts.workers })
  local per, rows, first_ok, share = {}, {}, 0, 0
  for i = 1, #items do per[i] = 0 end
  for j, r in ipairs(res) do
    local i, s = owner[j][1], owner[j][2]
    local pass = r.all == 1
    if pass then per[i] = per[i] + 1 end
    if s == 0 and pass then first_ok = first_ok + 1 end
    share = share + r.reward
    rows[j] = { id = items[i].id, protocol = "code", prediction = select(2, M.extract(items[i], responses[j])),
                output = responses[j], correct = pass, sample = s, passed = r.passed, total = r.total, status = r.status }
  end
  local sum = { acc = first_ok / #items, n = #items, correct = first_ok, by_category = {}, by_subject = {},
                reward = share / #res }
  local bench = opts.bench or "code"
  lt.run.log(bench .. "/code/acc", sum.acc)
  if samples > 1 then
    local avg, pk = 0, 0
    for i = 1, #items do avg, pk = avg + per[i] / samples, pk + M.pass_at_k(samples, per[i], k) end
    sum.avg_at_k, sum.pass_at_k, sum.k = avg / #items, pk / #items, k
    lt.run.log{ [bench .. "/code/avg_at_k"] = sum.avg_at_k, [("%s/code/pass@%d"):format(bench, k)] = sum.pass_at_k }
  end
  return { code = sum, items = rows, per = per }
end

-- An evaluator of policy m on held-out code items, before and after training: score(when)
-- scores greedy (WHEN_greedy) and `samples` sampled answers at `temperature` (WHEN_sampled,
-- pass@k at k) with M.score; → {greedy = pass@1, ok = {right per item}, p1 = pass@1 of the
-- samples, pk = pass@k, per = {right samples per item}}. o: tests, timeout, max_new_tokens,
-- samples, k, temperature.
function M.evaluator(m, items, o)
  local function opts(extra)
    local t = { tests = o.tests, timeout = o.timeout, max_new_tokens = o.max_new_tokens }
    for k, v in pairs(extra) do t[k] = v end
    return t
  end
  return function(when)
    local g = M.score(m, items, opts{ bench = when .. "_greedy", temperature = 0 })
    local s = M.score(m, items, opts{ bench = when .. "_sampled", samples = o.samples, k = o.k,
                                      temperature = o.temperature })
    local ok = {}
    for i, r in ipairs(g.items) do ok[i] = r.correct end
    return { greedy = g.code.acc, ok = ok, p1 = s.code.avg_at_k or s.code.acc,
             pk = s.code.pass_at_k or s.code.acc, per = s.per }
  end
end

return M

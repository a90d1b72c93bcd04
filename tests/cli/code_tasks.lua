-- tests/cli/code_tasks.lua (run by code_tasks.sh where the sandbox works): every canonical
-- solution of the shipped code files passes in the sandbox, under the counting driver and as
-- HumanEval's plain program; wrong ones fail, partly wrong ones get the share of tests they
-- pass (counted here by hand from the tests), a timeout keeps the tests counted before it,
-- exits and prints of the program do not fool the count; the GRPO reward on a right and a
-- wrong completion of the tiny-code tasks; run_many gives run's results in order.
local T = require "lt.test"
local code = require "lt.tasks.code"
local data = os.getenv("CODE_TEST_REPO") .. "/tests/data/eval"

local files = { "humaneval/sample.jsonl", "humaneval/evalplus_sample.jsonl", "mbpp/sample.jsonl" }
local all = {}
for _, f in ipairs(files) do
  for _, it in ipairs(code.read(data .. "/" .. f)) do all[#all + 1] = it end
end

-- the canonical solution as a model would answer: a completion (HumanEval), a ```python block (MBPP)
local function canonical(it) return it.format == "mbpp" and ("```python\n" .. it.canonical .. "\n```\n") or it.canonical end
local function by_id(id) for _, it in ipairs(all) do if it.id == id then return it end end end

T.case("every canonical solution passes, base and plus tests, driver and plain program", function()
  T.eq(#all, 8, "tasks in the shipped files")
  for _, it in ipairs(all) do
    for _, tests in ipairs{ "base", "plus" } do
      local r = code.run(it, canonical(it), { tests = tests })
      T.eq(r.all, 1, ("%s (%s): all pass; status %s, %d/%d, stderr %s"):format(it.id, tests, r.status, r.passed, r.total, r.stderr))
      T.eq(r.reward, 1, it.id)
      T.ok(r.total >= 2, it.id .. ": tests counted")
    end
    if it.test or it.format == "mbpp" then
      local p = lt.sandbox.run{ code = code.program(it, canonical(it)) }
      T.eq(p.status, "ok", it.id .. ": HumanEval's plain program: " .. p.stderr)
    end
  end
end)

T.case("a wrong solution fails every way", function()
  for _, it in ipairs(all) do
    local wrong = it.format == "mbpp" and ("def %s(*args):\n    return 'wrong'\n"):format(it.entry_point) or "    return 'wrong'\n"
    local r = code.run(it, wrong, { tests = "plus" })
    T.eq(r.all, 0, it.id)
    T.eq(r.passed, 0, it.id .. ": no test passes")
    if it.test or it.format == "mbpp" then T.eq(lt.sandbox.run{ code = code.program(it, wrong) }.status, "error", it.id) end
  end
end)

T.case("partly wrong: the share of tests passed, counted by hand", function()
  -- True for every string: "Never odd or even" yes, "abc" no, "" yes, "A b A" yes
  local r = code.run(by_id("Sample/2"), "    return True\n")
  T.eq(r.passed, 3); T.eq(r.total, 4); T.eq(r.reward, 0.75); T.eq(r.all, 0)
  -- None: right only for [4, 4] (base); plus adds [] (right), [5, 5, 3, 3], [-2, -3], range(50)
  r = code.run(by_id("SamplePlus/0"), "    return None\n")
  T.eq(r.passed, 1); T.eq(r.total, 3)
  r = code.run(by_id("SamplePlus/0"), "    return None\n", { tests = "plus" })
  T.eq(r.passed, 2); T.eq(r.total, 7)
  -- n: right for 1 and 0, wrong for 3 (and the challenge test, 100)
  r = code.run(by_id("901"), "def square_sum(n):\n    return n\n")
  T.eq(r.passed, 2); T.eq(r.total, 3)
  r = code.run(by_id("901"), "def square_sum(n):\n    return n\n", { tests = "plus" })
  T.eq(r.passed, 2); T.eq(r.total, 4)
  -- floats within EvalPlus's atol (1e-6) pass, 1e-3 off does not
  T.eq(code.run(by_id("SamplePlus/1"), "    return (a * a + b * b) ** 0.5 + 1e-9\n", { tests = "plus" }).all, 1)
  T.eq(code.run(by_id("SamplePlus/1"), "    return (a * a + b * b) ** 0.5 + 1e-3\n").passed, 0)
end)

T.case("a timeout keeps the tests counted before it", function()
  local loops = "    if not xs:\n        while True: pass\n    vals = sorted(set(xs))\n    return vals[-2] if len(vals) >= 2 else None\n"
  local r = code.run(by_id("SamplePlus/0"), loops, { tests = "plus", timeout = 2 })
  T.eq(r.status, "timeout")
  T.eq(r.passed, 3, "the three base inputs before the empty list")
  T.eq(r.total, 7); T.eq(r.all, 0)
end)

T.case("exits and prints of the program do not fool the count", function()
  local it = by_id("Sample/3")
  -- sys.exit(0) inside the function passes HumanEval's plain program (exit 0) ...
  local exits = "    import sys\n    sys.exit(0)\n"
  T.eq(lt.sandbox.run{ code = code.program(it, exits) }.status, "ok", "the plain program is fooled")
  -- ... but not the driver, which counts each assert
  local r = code.run(it, exits)
  T.eq(r.passed, 0); T.eq(r.all, 0)
  r = code.run(it, "    import os\n    os._exit(0)\n")
  T.eq(r.reward, 0); T.eq(r.all, 0)
  -- printing (a lot, and a look-alike mark) changes nothing
  r = code.run(it, "    print('x' * 100000)\n    print('__lt_tests_1_1__ 99 0 end')\n    return sum(1 for ch in s if ch.lower() in 'aeiou')\n")
  T.eq(r.all, 1); T.eq(r.passed, 5)
  -- a solution that does not compile
  r = code.run(it, "    return (\n")
  T.eq(r.status, "error"); T.eq(r.reward, 0); T.ok(r.stderr:find("solution:"), r.stderr)
end)

T.case("the GRPO reward on the tiny-code tasks: a right and a wrong completion", function()
  local tasks = require("lt.models.tiny_code").tasks()
  local path = os.getenv("CODE_TEST_SCRATCH") .. "/tiny.jsonl"
  local f = assert(io.open(path, "w"))
  for i = 1, #tasks, 37 do
    local t = tasks[i]
    f:write(lt.json.encode{ task_id = t.task_id, prompt = t.prompt, canonical_solution = t.canonical_solution,
                            test = t.test, entry_point = t.entry_point }, "\n")
  end
  f:close()
  local items = code.read(path)
  local slips = {}
  for _, t in ipairs(tasks) do slips[t.task_id] = t.slip end
  local share, all = code.reward_fn(items), code.reward_fn(items, { mode = "all" })
  for _, it in ipairs(items) do
    local item = { id = it.id, question = it.prompt, answer = "" }
    T.eq(share(item, it.canonical), 1, it.id)
    T.eq(all(item, it.canonical .. "\n\ndef other():\n    pass\n"), 1, it.id .. ": cut at the stop")
    T.eq(all(item, slips[it.id]), 0, it.id .. ": the slip")
    T.ok(share(item, slips[it.id]) < 1, it.id)
    T.eq(share(item, "    return\n"), 0, it.id)
  end
  T.raises(function() share({ id = "nope" }, "x") end, "no task nope")
  -- every third task of the recipe: its solution passes, its slip does not (the tests hold
  -- what they mean: a chained comparison once made "== x > n" pass nothing)
  local rows, cases = {}, {}
  for i = 1, #tasks, 3 do
    local t = tasks[i]
    rows[#rows + 1] = lt.json.encode{ task_id = t.task_id, prompt = t.prompt, canonical_solution = t.canonical_solution,
                                      test = t.test, entry_point = t.entry_point }
  end
  f = assert(io.open(path, "w")); f:write(table.concat(rows, "\n"), "\n"); f:close()
  items = code.read(path)
  for _, it in ipairs(items) do cases[#cases + 1] = { it, it.canonical }; cases[#cases + 1] = { it, slips[it.id] } end
  local res = code.run_many(cases, { workers = 2 })
  for i = 1, #cases, 2 do
    T.eq(res[i].all, 1, cases[i][1].id .. ": the solution")
    T.eq(res[i + 1].all, 0, cases[i][1].id .. ": the slip")
  end
  T.raises(function() code.reward_fn(items, { mode = "most" }) end, "mode 'most'")
end)

T.case("run_many: run's results, in order, each distinct program once", function()
  local cases = {}
  for _, it in ipairs(all) do
    cases[#cases + 1] = { it, canonical(it) }
    cases[#cases + 1] = { it, "    return None\n" }
    cases[#cases + 1] = { it, canonical(it) }
  end
  local many = code.run_many(cases, { workers = 2, tests = "plus" })
  T.eq(#many, #cases)
  for i, c in ipairs(cases) do
    local one = code.run(c[1], c[2], { tests = "plus" })
    T.eq(many[i].passed, one.passed, c[1].id .. " case " .. i)
    T.eq(many[i].total, one.total, c[1].id)
    T.eq(many[i].all, one.all, c[1].id)
  end
end)

T.case("lt.eval.run humaneval:FILE / mbpp:FILE: protocol code, lt.eval.score's shape, consistent counts", function()
  local dir = os.getenv("CODE_TEST_SCRATCH") .. "/model"
  lt.model.new{ out = dir, layers = 1, hidden = 32, heads = 2, kv_heads = 1, vocab = 300, seed = 3, corpus = { data .. "/humaneval" } }
  local m = lt.model.load(dir)
  local res = lt.eval.run(m, "humaneval:" .. data .. "/humaneval/sample.jsonl",
                          { samples = 2, k = 2, temperature = 1, max_new_tokens = 8, limit = 3 })
  T.eq(res.code.n, 3, "limit")
  T.eq(#res.items, 6, "2 samples of 3 items")
  local any, first = {}, 0
  for _, r in ipairs(res.items) do
    T.eq(r.protocol, "code")
    T.ok(r.sample == 0 or r.sample == 1, "sample")
    T.eq(type(r.correct), "boolean")
    if r.correct then any[r.id] = true; if r.sample == 0 then first = first + 1 end end
  end
  local n_any = 0
  for _ in pairs(any) do n_any = n_any + 1 end
  T.eq(res.code.acc, first / 3, "acc: first answers")
  T.near(res.code.pass_at_k, n_any / 3, 1e-12, "pass@2 of 2 samples: any right")
  T.eq(res.code.k, 2)
  lt.run.flush()
  local logged = lt.run.query("SELECT count(*) AS n FROM metrics WHERE run_id = ? AND name = 'humaneval/code/pass@2'", lt.run.id())
  T.eq(logged[1].n, 1, "pass@2 logged")
  local mb = lt.eval.run(m, "mbpp:" .. data .. "/mbpp/sample.jsonl", { max_new_tokens = 4 })
  T.eq(mb.code.n, 2); T.eq(#mb.items, 2)
  T.raises(function() lt.eval.run(m, "mbpp:" .. data .. "/mbpp/sample.jsonl", { protocols = { "logit" } }) end, 'the one protocol "code"')
  T.raises(function() lt.eval.run(m, "humaneval:" .. data .. "/humaneval/sample.jsonl", { shots = 3 }) end, "unknown option 'shots'")
  T.raises(function() lt.eval.run(m, "humaneval:" .. data .. "/bad/code_no_test.jsonl", {}) end, "code_no_test.jsonl:2")
end)

T.finish()

-- tests/lua/code_tasks.lua: lt.tasks.code without running a program (the sandbox runs are
-- tests/cli/code_tasks.sh): the HumanEval / EvalPlus / MBPP readers and their errors naming
-- file:line, the code extracted from a response, HumanEval's test program, pass@k against
-- hand-computed values, what a sandbox result counts as, and the tiny-code tasks.
local T = require "lt.test"
local code = require "lt.tasks.code"
local data = arg[0]:match("^(.*)/lua/[^/]+$") .. "/data/eval"

T.case("HumanEval reader", function()
  local items = code.read(data .. "/humaneval/sample.jsonl")
  T.eq(#items, 4, "tasks")
  T.eq(items[1].id, "Sample/0")
  T.eq(items[1].entry_point, "running_max")
  T.eq(items[1].format, "humaneval")
  T.ok(items[1].prompt:find("^from typing import List\n"), "prompt kept as written")
  T.ok(items[1].test:find("def check%(candidate%)"), "test")
  T.eq(items[3].source, data .. "/humaneval/sample.jsonl:3", "source file:line")
  T.eq(items[1].inputs, nil, "no EvalPlus inputs")
end)

T.case("EvalPlus reader: base and plus inputs counted, the line kept for the sandbox", function()
  local items = code.read(data .. "/humaneval/evalplus_sample.jsonl")
  T.eq(items[1].inputs.base, 3, "base_input")
  T.eq(items[1].inputs.plus, 4, "plus_input")
  T.eq(items[2].inputs.base, 2)
  T.eq(items[2].inputs.plus, 3)
  T.ok(items[1].raw:find('"plus_input"', 1, true), "raw line")
end)

T.case("MBPP reader: entry point from the tests, the MBPP+ prompt", function()
  local items = code.read(data .. "/mbpp/sample.jsonl")
  T.eq(items[1].id, "901", "numeric task_id as text")
  T.eq(items[1].format, "mbpp")
  T.eq(items[1].entry_point, "square_sum")
  T.eq(items[2].entry_point, "long_words")
  T.eq(#items[1].tests, 3)
  T.eq(#items[1].plus_tests, 1)
  T.eq(items[1].prompt, '"""\nWrite a function to find the sum of the squares of the first n natural numbers.\nassert square_sum(1) == 1\n"""\n')
  -- format = "humaneval" forced on an MBPP line: it lacks a prompt
  T.raises(function() code.read(data .. "/mbpp/sample.jsonl", { format = "humaneval" }) end, "sample.jsonl:1: task 901: no prompt")
end)

T.case("MBPP: the entry point is the function the tests call", function()
  local tmp = os.getenv("LTRUN_TEST_TMP") .. "/code_tasks_mbpp.jsonl"
  local f = assert(io.open(tmp, "w"))
  -- the reference code's helper g comes first; sorted() is a builtin, not the entry point
  f:write('{"task_id": 1, "text": "t", "code": "def g(x): return x\\ndef f(x): return g(x)", "test_list": ["assert sorted(f([2, 1])) == [1, 2]"]}\n')
  f:write('{"task_id": 2, "text": "t", "code": "def g(x): return x", "test_list": ["assert f(1) == 1"]}\n')
  f:close()
  local items = code.read(tmp)
  T.eq(items[1].entry_point, "f")
  T.eq(items[2].entry_point, "f", "what the tests call, not a function of the code")
end)

T.case("bad lines are errors naming file:line", function()
  local bad = data .. "/bad/"
  T.raises(function() code.read(bad .. "code_no_test.jsonl") end, "code_no_test.jsonl:2: task Sample/0: no test")
  T.raises(function() code.read(bad .. "code_no_entry.jsonl") end, "code_no_entry.jsonl:1: task Sample/0: no entry_point")
  T.raises(function() code.read(bad .. "code_json.jsonl") end, "code_json.jsonl:3: not JSON")
  T.raises(function() code.read(bad .. "code_mbpp_tests.jsonl") end, "code_mbpp_tests.jsonl:1: task 901: no test %(test_list")
  T.raises(function() code.read(bad .. "code_dup.jsonl") end, "code_dup.jsonl:3: task_id Sample/1 repeats line 1")
  T.raises(function() code.read(bad .. "no_such.jsonl") end, "cannot read .*no_such.jsonl")
  T.raises(function() code.read(data .. "/humaneval/sample.jsonl", { format = "apps" }) end, "format 'apps'")
  T.raises(function() code.read(data .. "/humaneval/sample.jsonl", { fromat = "mbpp" }) end, "unknown option 'fromat'")
  local tmp = os.getenv("LTRUN_TEST_TMP") .. "/code_tasks_bad.jsonl"
  local function with(text, pattern)
    local f = assert(io.open(tmp, "w")); f:write(text); f:close()
    T.raises(function() code.read(tmp) end, pattern, text)
  end
  with('[1, 2]\n', "code_tasks_bad.jsonl:1: expected a JSON object")
  with('{"prompt": "def f():\\n", "test": "def check(c): pass", "entry_point": "f"}\n', ":1: no task_id")
  with('\n{"task_id": "a", "prompt": "def f():\\n", "test": "def check(c): pass", "entry_point": "f x"}\n', ":2: task a: no entry_point")
  with('{"task_id": "a", "prompt": "def f():\\n", "test": "assert True", "entry_point": "f"}\n', ":1: task a: no test")
  with('{"task_id": "a", "prompt": "def f():\\n", "entry_point": "f", "base_input": [[1]]}\n', ":1: task a: base_input without canonical_solution")
  with('{"task_id": "a", "prompt": "def f():\\n", "entry_point": "f", "base_input": 3, "canonical_solution": ""}\n', "base_input: expected a list")
  with('{"task_id": 7, "text": "t", "test_list": ["assert 1 == 1"]}\n', ":1: task 7: no entry_point")
  with('\n\n', "has no tasks")
  -- hostile-input pass: a NUL byte used to end the line early (io.lines), so a binary file read
  -- as "no tasks"; a folder and a nil path gave Lua's own messages
  with('\0\255 garbage\n', "code_tasks_bad.jsonl:1: not JSON")
  with('{"task_id": "a", "prompt": "def f():\\n", "test": "def check(c): pass", "entry_point": "f"}\0\n', ":1: not JSON")
  T.raises(function() code.read(os.getenv("LTRUN_TEST_TMP")) end, "cannot read .*test%-tmp")
  T.raises(function() code.read(nil) end, "path: expected a string, got nil")
end)

T.case("the code of a response", function()
  local it = code.read(data .. "/humaneval/sample.jsonl")[1]
  -- a raw completion continues the prompt, cut at HumanEval's stop sequences
  local sol, c = code.extract(it, "    return xs\n\ndef other():\n    pass\n")
  T.eq(c, "    return xs\n")
  T.eq(sol, it.prompt .. "    return xs\n")
  T.eq(select(2, code.extract(it, "    return xs\nprint(1)")), "    return xs")
  -- a ```python block that defines the function stands alone, the prompt's imports first
  sol, c = code.extract(it, "Here:\n```python\ndef running_max(xs):\n    return xs\n```\nDone.")
  T.eq(c, "def running_max(xs):\n    return xs\n")
  T.eq(sol, "from typing import List\ndef running_max(xs):\n    return xs\n")
  -- a block without the function continues the prompt; an unclosed block runs to the end
  T.eq(code.extract(it, "```py\n    return xs\n```"), it.prompt .. "    return xs\n")
  T.eq(select(2, code.extract(it, "```python\ndef running_max(xs): return xs")), "def running_max(xs): return xs")
  -- MBPP: the code is the whole program
  local mb = code.read(data .. "/mbpp/sample.jsonl")[1]
  T.eq(code.extract(mb, "def square_sum(n): return n"), "def square_sum(n): return n")
  T.raises(function() code.extract(it, 5) end, "task Sample/0: response: expected a string, got number")
end)

T.case("HumanEval's test program: prompt + completion + test + check(entry_point)", function()
  local it = code.read(data .. "/humaneval/sample.jsonl")[2]
  T.eq(code.program(it, "    return 0\n"), it.prompt .. "    return 0\n\n\n" .. it.test .. "\n\ncheck(mean_gap)\n")
  local mb = code.read(data .. "/mbpp/sample.jsonl")[1]
  T.eq(code.program(mb, "def square_sum(n): return 0"), "def square_sum(n): return 0\n\n\n\nassert square_sum(1) == 1\n" ..
       "assert square_sum(3) == 14\nassert square_sum(0) == 0\n")
end)

T.case("pass@k: the unbiased estimator against hand-computed values", function()
  -- 1 - C(n-c, k) / C(n, k) by hand; the estimator multiplies at most c factors, each
  -- rounded once (relative error 2^-53 each): 1e-12 bounds the error for c <= 40
  T.near(code.pass_at_k(5, 2, 1), 1 - 3 / 5, 1e-12, "n=5 c=2 k=1: 2/5")
  T.near(code.pass_at_k(5, 2, 2), 1 - 3 / 10, 1e-12, "n=5 c=2 k=2: 1 - C(3,2)/C(5,2)")
  T.near(code.pass_at_k(10, 3, 3), 17 / 24, 1e-12, "n=10 c=3 k=3: 1 - 35/120")
  T.eq(code.pass_at_k(5, 2, 4), 1.0, "n - c < k: every draw of 4 holds a pass")
  T.eq(code.pass_at_k(10, 0, 3), 0.0, "no passes")
  T.eq(code.pass_at_k(8, 8, 8), 1.0, "all pass")
  -- C(2000, 1000) is past a double's range; C(1999,1000)/C(2000,1000) = 1000/2000
  T.near(code.pass_at_k(2000, 1, 1000), 0.5, 1e-12, "n=2000 c=1 k=1000")
  -- Python's math.comb with fractions.Fraction: 1 - C(190,100)/C(200,100), 1 - C(1960,10)/C(2000,10)
  T.near(code.pass_at_k(200, 10, 100), 0.9992289739372822, 1e-12, "n=200 c=10 k=100")
  T.near(code.pass_at_k(2000, 40, 10), 0.18330349746302352, 1e-12, "n=2000 c=40 k=10")
  T.raises(function() code.pass_at_k(5, 6, 1) end, "c <= n")
  T.raises(function() code.pass_at_k(5, 2, 0) end, "1 <= k <= n")
  T.raises(function() code.pass_at_k(5, 2, 6) end, "1 <= k <= n")
  T.raises(function() code.pass_at_k(5, 1.5, 1) end, "c = 1.5: expected a whole number")
end)

T.case("what a sandbox result counts as", function()
  local function res(stdout, status) return { stdout = stdout, status = status or "ok", stderr = "", wall = 0 } end
  local M_ = "__m__"
  local r = code.outcome(res("\n__m__ 1 0 \n\n__m__ 2 0 \n\n__m__ 2 1 \n\n__m__ 2 1 end\n", "error"), M_, 3)
  T.eq(r.passed, 2); T.eq(r.failed, 1); T.eq(r.total, 3); T.near(r.reward, 2 / 3, 1e-15); T.eq(r.all, 0)
  r = code.outcome(res("\n__m__ 3 0 end\n"), M_, 3)
  T.eq(r.reward, 1); T.eq(r.all, 1)
  -- a timeout keeps the tests counted so far; check() (no total): one more for the unfinished part
  r = code.outcome(res("\n__m__ 2 0 \n", "timeout"), M_, nil)
  T.eq(r.total, 3); T.near(r.reward, 2 / 3, 1e-15); T.eq(r.all, 0)
  -- check() raised outside an assert: the driver counted it as one fail and ended
  r = code.outcome(res("\n__m__ 2 0 \n\n__m__ 2 1 end\n", "error"), M_, nil)
  T.eq(r.total, 3); T.near(r.reward, 2 / 3, 1e-15); T.eq(r.all, 0)
  r = code.outcome(res("\n__m__ 2 0 end\n", "timeout"), M_, 4)
  T.eq(r.all, 0, "not all without a clean exit")
  -- nothing counted (the solution did not load): reward 0
  r = code.outcome(res("", "error"), M_, 3)
  T.eq(r.passed, 0); T.eq(r.reward, 0); T.eq(r.all, 0)
  -- another mark (a program printing a look-alike) is not counted; counts that do not add up
  -- to the known number of tests are not trusted
  r = code.outcome(res("__x__ 9 0 end\n__m__ 1 1 end\n"), M_, 2)
  T.eq(r.passed, 1); T.eq(r.all, 0)
  r = code.outcome(res("__m__ 5 0 end\n"), M_, 2)
  T.eq(r.reward, 0); T.eq(r.all, 0); T.eq(r.total, 2)
  r = code.outcome(res("__m__ 1 0 end\n"), M_, 2)
  T.eq(r.reward, 0, "ended after 1 of 2 tests")
end)

T.case("tiny-code tasks: unique, HumanEval-layout, the slip differs from the solution", function()
  local tasks = require("lt.models.tiny_code").tasks()
  local ids = {}
  for _, t in ipairs(tasks) do
    T.ok(not ids[t.task_id], "unique id " .. t.task_id); ids[t.task_id] = true
    T.ok(t.slip ~= t.canonical_solution, t.task_id)
    T.ok(t.prompt:find('^def ' .. t.entry_point .. '%(x?s?%):\n    """Return .-"""\n$'), t.prompt)
    T.ok(t.test:find("^def check%(candidate%):\n"), t.task_id)
  end
  T.eq(#tasks, 6 * 9 * 8 + 8 * 8, "7 kinds, n in 1..9 (remainder: 2..9), 8 names")
end)

T.finish()

-- tests/lua/inputs.lua: careless and hostile input files (issue 12): FIFOs and devices are
-- refused instead of hanging or reading forever, empty benchmarks and limit <= 0 are errors
-- instead of "succeeding" with zero items, non-UTF-8 benchmark text is named by file:line.
local T = require "lt.test"
local root = arg[0]:match("^(.*)/tests/lua/[^/]+$")
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_inputs"
os.execute("rm -rf '" .. tmp .. "' && mkdir -p '" .. tmp .. "'")
local tiny_tok = root .. "/tests/data/text/tiny/tokenizer.json"
local mcq = root .. "/tests/data/eval/mcq/sample.jsonl"

local function write(name, text)
  local f = assert(io.open(tmp .. "/" .. name, "wb"))
  f:write(text)
  f:close()
  return tmp .. "/" .. name
end

-- A FIFO with a writer that gives up after a few seconds: without the regular-file check a
-- reader blocks until the writer comes and then reads "{}" (a different error), so the test
-- fails instead of hanging; with it the reader never opens the FIFO.
local function fifo(name)
  local p = name:sub(1, 1) == "/" and name or tmp .. "/" .. name
  assert(os.execute("mkfifo '" .. p .. "'") == 0, "mkfifo")
  os.execute("(timeout 5 sh -c \"printf '{}' > '" .. p .. "'\" >/dev/null 2>&1 &)")
  return p
end

T.case("benchmarks: /dev/null, a FIFO, empty and blank files are errors", function()
  T.raises(function() lt.eval.load("mcq", "/dev/null") end, "/dev/null: not a regular file")
  T.raises(function() lt.eval.load("mcq", fifo("bench.jsonl")) end, "not a regular file")
  T.raises(function() lt.eval.load("mcq", write("empty.jsonl", "")) end, "empty.jsonl: no mcq items")
  T.raises(function() lt.eval.load("mcq", write("blank.jsonl", "  \n\n\t\n")) end, "blank.jsonl: no mcq items")
  T.raises(function() lt.eval.load("mmlu", write("header_only.csv", "")) end, "header_only.csv")
  T.ok(#lt.eval.load("mcq", mcq) > 0, "the sample still loads")
end)

T.case("lt.eval.run: limit must be a positive integer", function()
  for _, lim in ipairs({ 0, -1, 1.5 }) do
    T.raises(function() lt.eval.run(nil, "mc:" .. mcq, { limit = lim }) end,
             "option limit: expected a positive integer, got " .. tostring(lim):gsub("%-", "%%-"))
  end
end)

T.case("benchmarks: non-UTF-8 text is named by file and line", function()
  local j = write("latin1.jsonl", '{"question": "ok?", "choices": ["a", "b"], "answer": "A"}\n' ..
                                  '{"question": "caf\233?", "choices": ["a", "b"], "answer": "B"}\n')
  T.raises(function() lt.eval.load("mcq", j) end, "latin1.jsonl:2: not UTF%-8 text %(invalid byte 0xe9 at column 18%)")
  local c = write("latin1_test.csv", "q,a,b,c,d,A\nq2,a,b,c,d,B\nd\233j\224,a,b,c,d,C\n")
  T.raises(function() lt.eval.load("mmlu", c) end, "latin1_test%.csv:3: not UTF%-8 text")
end)

T.case("tokenizer.json, config.json, safetensors, corpus inputs: regular files only", function()
  T.raises(function() lt.tokenizer.load(fifo("tok.json")) end, "not a regular file")
  T.raises(function() lt.tokenizer.load("/dev/zero") end, "not a regular file")
  -- a model folder whose config.json is a FIFO, then another whose weights are a FIFO. Two
  -- folders, never a FIFO swapped back for the real file: the FIFO's background writer may open
  -- the path only after the swap and would then overwrite the real config.json with "{}".
  local function model_with_fifo(dir, file)
    lt.model.new{ out = dir, arch = "qwen3", layers = 1, hidden = 16, heads = 2, kv_heads = 1, vocab = 300 }
    assert(os.remove(dir .. "/" .. file))
    return fifo(dir .. "/" .. file)
  end
  model_with_fifo(tmp .. "/model_cfg_fifo", "config.json")
  T.raises(function() lt.model.load(tmp .. "/model_cfg_fifo") end, "config.json: not a regular file")
  model_with_fifo(tmp .. "/model_st_fifo", "model.safetensors")
  T.raises(function() lt.model.load(tmp .. "/model_st_fifo") end, "not a regular file")
  T.raises(function()
    lt.data.pack{ tokenizer = tiny_tok, out = tmp .. "/packed", inputs = { fifo("corpus.txt") }, progress = false }
  end, "not a regular file")
  T.raises(function()
    lt.data.pack{ tokenizer = tiny_tok, out = tmp .. "/packed2", inputs = { "/dev/zero" }, progress = false }
  end, "/dev/zero: not a regular file")
end)

T.finish()

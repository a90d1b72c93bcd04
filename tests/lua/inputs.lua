-- tests/lua/inputs.lua: careless and hostile input files (issue 12): FIFOs and devices are
-- refused instead of hanging or reading forever, empty benchmarks and limit <= 0 are errors
-- instead of "succeeding" with zero items, non-UTF-8 benchmark text is named by file:line.
-- Issue 23: tensors too large or of negative size are one-line errors naming the shape and
-- bytes; misspelled option keys are errors naming the key (m:generate refuses intervene);
-- GRPO prompts longer than the limit are named by file:line before anything runs; math
-- answers that are worked solutions without their final-answer marker are refused.
-- Issue 34: a one-line sentence as a math answer, several final-answer markers, and out-of-range
-- m:generate numbers are refused.
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
  local made = os.execute("mkfifo '" .. p .. "'")  -- 0, or true where LuaJIT has Lua 5.2's os.execute (sid)
  assert(made == 0 or made == true, "mkfifo")
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

-- ---- issue 23 -----------------------------------------------------------------------------

-- an error raised through the bindings: its message, one line, no C++ backtrace
local function one_line(fn, pattern)
  local ok, err = pcall(fn)
  T.ok(not ok, "expected an error matching " .. pattern)
  err = tostring(err)
  T.ok(err:find(pattern) ~= nil, ("error %q does not match %q"):format(err, pattern))
  T.ok(not err:find("\n") and not err:find("frame #"), "one line, no backtrace: " .. err)
end

T.case("tensor constructors: too large, negative and non-integer sizes are one-line errors", function()
  -- 1e12 floats: 4e12 bytes, more than any machine this runs on holds (RAM + swap)
  one_line(function() lt.zeros({ 1e12 }) end,
           "^lt%.zeros: a float32 tensor of shape %[1000000000000%] needs 4000000000000 bytes %(3%.6 TiB%)")
  one_line(function() lt.zeros(1e12) end, "^lt%.zeros: a float32 tensor of shape %[1000000000000%] needs")
  one_line(function() lt.tensor(1e6, 1e6) end, "^lt%.tensor: a float32 tensor of shape %[1000000, 1000000%] needs 4000000000000 bytes")
  one_line(function() lt.ones({ 1e6, 1e6 }, { dtype = "float64" }) end, "^lt%.ones: a float64 tensor of shape %[1000000, 1000000%] needs 8000000000000 bytes")
  one_line(function() lt.randn({ 1e12 }) end, "^lt%.randn: .* needs 4000000000000 bytes")
  one_line(function() lt.rand({ 1e12 }) end, "^lt%.rand: .* needs 4000000000000 bytes")
  one_line(function() lt.full({ 1e12 }, 1) end, "^lt%.full: .* needs 4000000000000 bytes")
  one_line(function() lt.randint(0, 5, { 1e12 }) end, "^lt%.randint: a int64 tensor .* needs 8000000000000 bytes")
  one_line(function() lt.eye(1e7) end, "^lt%.eye: a float32 tensor of shape %[10000000, 10000000%] needs 400000000000000 bytes")
  one_line(function() lt.arange(0, 1e13) end, "^lt%.arange: a int64 tensor of shape %[10000000000000%] needs 80000000000000 bytes")
  one_line(function() lt.linspace(0, 1, 1e13) end, "^lt%.linspace: .* needs 40000000000000 bytes")
  one_line(function() lt.zeros({ 1e15, 1e15 }) end, "^lt%.zeros: a float32 tensor of shape %[1000000000000000, 1000000000000000%] needs more than 2%^63 bytes")
  -- negative and non-integer sizes name the entry
  one_line(function() lt.zeros({ 2, -1 }) end, "^lt%.zeros: shape%[2%]: %-1 is out of range 0%.%.")
  one_line(function() lt.zeros(2, -3) end, "^lt%.zeros: size 2: %-3 is out of range 0%.%.")
  one_line(function() lt.ones({ 2.5 }) end, "^lt%.ones: shape%[1%]: expected an integer, got 2%.5")
  one_line(function() lt.eye(-1) end, "^lt%.eye: argument 1: %-1 is out of range 0%.%.")
  one_line(function() lt.linspace(0, 1, -2) end, "^lt%.linspace: argument 3: %-2 is out of range 0%.%.")
  one_line(function() lt.arange(0, 1, 0) end, "^lt%.arange: start 0, stop 1, step 0: expected finite numbers and a step other than 0")
  one_line(function() lt.arange(1, 0) end, "^lt%.arange: start 1, stop 0, step 1: the step leads away from stop")
  one_line(function() lt.randint(5, 0, { 3 }) end, "^lt%.randint: random_ expects 'from' to be less than 'to'")
  -- LibTorch's own errors keep their message and lose the backtrace
  one_line(function() return lt.zeros({ 2, 3 }):matmul(lt.zeros({ 4, 5 })) end, "cannot be multiplied")
  -- what still works
  T.same_table(lt.zeros({ 0, 3 }).shape, { 0, 3 })
  T.same_table(lt.zeros(2, 3):view(-1, 2).shape, { 3, 2 })
  T.eq(lt.arange(0, 10, 3):numel(), 4)
end)

local m23 = tmp .. "/m23"
lt.model.new{ out = m23, arch = "qwen3", layers = 1, hidden = 16, heads = 2, kv_heads = 1, vocab = 300, seed = 1,
              corpus = { write("corpus23.txt", string.rep("the cat sat. seven apples and a big dog. What is 1+1? 2\n%\n", 20)) } }

T.case("option tables: a misspelled key is an error naming it", function()
  local m = lt.model.load(m23)
  local ids = m.tokenizer:encode("the cat")
  local data = lt.randint(0, 50, { 4, 9 })
  local mcq_items = lt.eval.load("mcq", mcq)
  local calls = {
    { function() m:generate(ids, { max_new_token = 2 }) end, "model:generate: unknown option 'max_new_token' %(known: cache, drop_finished, max_new_tokens, max_rows, refill, seed, share_prefill, special, stop, stop_ids, sync_every, temperature, top_k, top_p%)" },
    { function() m:generate("the cat", { max_new_tokens = 2, temprature = 0 }) end, "model:generate: unknown option 'temprature'" },
    { function() m:generate(ids, 3) end, "model:generate: argument 3 %(options%): expected a table, got number" },
    { function() m:generate(ids, { max_new_tokens = 2, cache = "paged" }) end,
      "model:generate: option cache must be \"dynamic\" or \"static\", got \"paged\"" },
    { function() m:forward(ids, { captur = true }) end, "model:forward: unknown option 'captur'" },
    { function() m:forward(ids, { [1] = true }) end, "model:forward: options: keys must be option names, found the key 1" },
    { function() lt.model.load(m23, { dtyp = "float64" }) end, "lt%.model%.load: unknown option 'dtyp'" },
    { function() lt.model.new{ out = tmp .. "/never", layer = 2 } end, "lt%.model%.new: unknown option 'layer'" },
    { function() lt.model.hybrid{ out = tmp .. "/never", embed = m23, layers = { { from = m23, layer = 0, kindd = "x" } } } end,
      "lt%.model%.hybrid: layers%[1%]: unknown option 'kindd'" },
    { function() lt.zeros({ 2 }, { dtyp = "int64" }) end, "lt%.zeros: unknown option 'dtyp' %(known: device, dtype, requires_grad%)" },
    { function() m.tokenizer:encode("x", { specials = false }) end, "tokenizer:encode: unknown option 'specials'" },
    { function() m.tokenizer:decode({ 1 }, { skip = true }) end, "tokenizer:decode: unknown option 'skip'" },
    { function() lt.json.encode({}, { pretty = true, indent = 2 }) end, "lt%.json%.encode: unknown option 'indent'" },
    { function() lt.train.causal_lm(m, { data = data, stepz = 1, log = false, progress = false }) end, "lt%.train%.causal_lm: unknown option 'stepz'" },
    -- renamed options: refused naming the new names (one meaning per name)
    { function() lt.train.causal_lm(m, { data = data, clip = 1, log = false, progress = false }) end,
      "lt%.train%.causal_lm: option 'clip' was renamed: clip_grad %(the gradient%-norm clip%) or clip_ratio" },
    { function() lt.rl.grpo(m, { data = { { question = "q", answer = "1" } }, clip = 0.2 }) end,
      "lt%.rl%.grpo: option 'clip' was renamed: clip_grad %(the gradient%-norm clip%) or clip_ratio" },
    { function() lt.rl.policy_loss{ logp = lt.zeros({ 1, 1 }), old_logp = lt.zeros({ 1, 1 }), adv = lt.zeros({ 1 }),
                                    mask = lt.ones({ 1, 1 }), clip = 0.2 } end,
      "lt%.rl%.policy_loss: option 'clip' was renamed: clip_ratio" },
    { function() lt.train.causal_lm(m, { data = data, clip_grad = -1, log = false, progress = false }) end,
      "lt%.train%.causal_lm: clip_grad must be >= 0" },
    { function() lt.rl.grpo(m, { data = { { question = "q", answer = "1" } }, lr_mult = { [0.5] = 2 } }) end,
      "lt%.rl%.grpo: lr_mult key %(a block%): expected an integer, got 0%.5" },
    { function() lt.train.param_groups(m, { wd = 0 }) end, "lt%.train%.param_groups: unknown option 'wd'" },
    { function() lt.data.pack{ tokenizer = tiny_tok, out = tmp .. "/never", inputs = { mcq }, vall = 0.1 } end, "lt%.data%.pack: unknown option 'vall'" },
    { function() lt.eval.run(m, "mc:" .. mcq, { protocol = { "logit" } }) end, "lt%.eval%.score: unknown option 'protocol'" },
    { function() lt.eval.run(m, "mc:" .. mcq, { n = 3 }) end, "lt%.eval%.score: unknown option 'n'" },
    { function() lt.eval.score(m, mcq_items, {}, { shot = 1 }) end, "lt%.eval%.score: unknown option 'shot'" },
    { function() lt.eval.vote({ "a" }, { comapre = "math" }) end, "lt%.eval%.vote: unknown option 'comapre'" },
    { function() lt.eval.items("antonyms", { count = 3 }) end, "lt%.eval%.items: unknown option 'count'" },
    { function() lt.rl.rollout(m, { ids }, { group = 2 }) end, "lt%.rl%.rollout: unknown option 'group'" },
    { function() lt.rl.grpo(m, { data = { { question = "q", answer = "1" } }, batch = 2 }) end, "lt%.rl%.grpo: unknown option 'batch'" },
    { function() lt.rl.grpo(m, { data = { { question = "q", answer = "1" } }, rewards = { format = { wieght = 1 } } }) end,
      "lt%.rl%.grpo: rewards%.format: unknown option 'wieght'" },
    { function() lt.rl.accuracy(m, { { question = "q", answer = "1" } }, { max_tokens = 2 }) end, "lt%.rl%.accuracy: unknown option 'max_tokens'" },
    { function() lt.rl.prompts(mcq, { feild = "q" }) end, "lt%.rl%.prompts: unknown option 'feild'" },
    { function() lt.rl.advantages({ 1, 0 }, 2, { nrom = "none" }) end, "lt%.rl%.advantages: unknown option 'nrom'" },
    { function() lt.diag.js(lt.tensor{ 0.5, 0.5 }, lt.tensor{ 0.5, 0.5 }, { top = 1 }) end, "lt%.diag%.js: unknown option 'top'" },
    { function() lt.data.windows(tmp, { seqlen = 4 }) end, "lt%.data%.windows: unknown option 'seqlen'" },
    { function() require("lt.tasks").load("wordnet", { nn = 3 }) end, "tasks%.load: unknown option 'nn'" },
    { function() m:train_only({ layers = { 0 }, prat = "mlp" }) end, "unknown option 'prat' %(known: layers, part%)" },
    { function() require("lt.tasks").build(m.tokenizer, {}, { group = 2 }) end, "tasks%.build: unknown option 'group'" },
  }
  for i, c in ipairs(calls) do
    local ok, err = pcall(c[1])
    T.ok(not ok, ("call %d: expected an error matching %s"):format(i, c[2]))
    T.ok(tostring(err):find(c[2]) ~= nil, ("call %d: error %q does not match %q"):format(i, tostring(err), c[2]))
  end
  -- intervene belongs to m:forward: generate refuses it instead of never calling it
  local called = false
  T.raises(function()
    m:generate(ids, { max_new_tokens = 2, intervene = { [0] = function(h) called = true; return h end } })
  end, "model:generate: option intervene is not supported by generate")
  T.ok(not called, "the callback never ran")
  -- the right keys still pass
  T.eq(#m:generate(ids, { max_new_tokens = 2, temperature = 0 }), 2)
  T.ok(m:forward(ids, { capture = true, logits = "last" }).hidden ~= nil)
end)

T.case("m:generate (issue 34): its numbers are checked before anything is allocated", function()
  local m = lt.model.load(m23)  -- a 2,048-token context (max_position_embeddings)
  local ids = m.tokenizer:encode("the cat")
  local n = #ids
  for _, c in ipairs{
    { { max_new_tokens = 1e9 }, ("model:generate: prompt 1 is %d tokens and max_new_tokens is 1000000000: %d positions, "
        .. "more than the model's context of 2048 tokens %%(max_position_embeddings%%); lower max_new_tokens to at most %d")
        :format(n, n + 1e9, 2048 - n) },
    { { max_new_tokens = 2049 - n }, ("prompt 1 is %d tokens and max_new_tokens is %d: 2049 positions"):format(n, 2049 - n) },
    { { temperature = 0 / 0 }, "model:generate: option temperature must be a finite number >= 0 %(0: greedy%), got %-?nan" },
    { { temperature = -1 }, "model:generate: option temperature must be a finite number >= 0 %(0: greedy%), got %-1" },
    { { temperature = 1 / 0 }, "option temperature must be a finite number >= 0 %(0: greedy%), got inf" },
    { { temperature = 1, top_p = 2 }, "model:generate: option top_p must be in %(0, 1%] %(1: off%), got 2" },
    { { temperature = 1, top_p = 0 }, "option top_p must be in %(0, 1%]" },
    { { temperature = 1, top_p = 0 / 0 }, "option top_p must be in %(0, 1%] %(1: off%), got %-?nan" },
    { { top_k = -1 }, "model:generate: option top_k: %-1 is out of range 0%.%." },
    { { top_k = 1.5 }, "top_k" },
    { { max_new_tokens = 2.5 }, "max_new_tokens" } } do
    T.raises(function() m:generate(ids, c[1]) end, c[2])
  end
  -- a prompt beyond the context alone: named with the context, before a 60K-character prefill
  local long = string.rep("seven apples and ", 3600)  -- 61,200 characters
  T.raises(function() m:generate({ "the cat", long }, { max_new_tokens = 4 }) end,
           "model:generate: prompt 2 is %d+ tokens: the model's context is 2048 tokens %(max_position_embeddings%), "
           .. "which leaves no room for max_new_tokens = 4")
  T.raises(function() m:generate({ { 1, 2 }, { 3, 5000 } }, { max_new_tokens = 1 }) end,
           "model:generate: prompt 2: token 2 is id 5000, outside the model's vocabulary %[0, %d+%)")
  -- lt.rl.rollout goes through the same entry
  T.raises(function() lt.rl.rollout(m, { "the cat" }, { max_response = 2, top_p = 2 }) end,
           "generate: option top_p must be in %(0, 1%]")
  T.raises(function() lt.rl.rollout(m, { "the cat" }, { max_response = 2, temperature = 1 / 0 }) end,
           "generate: option temperature must be a finite number")
  -- the edges still generate: all of the context, top_p = 1, temperature = 0
  local full = {}
  for i = 1, 2044 do full[i] = 5 + i % 7 end
  local _, info = m:generate(full, { max_new_tokens = 4, stop_ids = {} })
  T.eq(#info[1].ids, 4, "prompt + max_new_tokens = the context exactly")
  T.eq(#m:generate({ ids }, { max_new_tokens = 2, temperature = 1, top_p = 1, top_k = 0 })[1], 2)
end)

T.case("GRPO / rollout: a prompt longer than the limit is named by file:line before anything runs", function()
  local m = lt.model.load(m23):train_only("all")
  local long = string.rep("seven apples and ", 3000)  -- 51,000 characters
  local path = write("long.jsonl", lt.json.encode{ question = "What is 1+1?", answer = "2" } .. "\n" ..
                                   lt.json.encode{ question = long, answer = "3" } .. "\n")
  local o = { data = path, template = "{question}", prompts = 1, group_size = 2, max_response = 4, iterations = 1,
              log = false, progress = false, decontaminate = 0 }
  local t0 = lt.clock()
  T.raises(function() lt.rl.grpo(m, o) end,
           "long%.jsonl:2: the prompt is %d+ tokens, longer than 2044 %(the model's max_position_embeddings 2048 less max_response 4%)")
  T.ok(lt.clock() - t0 < 30, "refused before any rollout")
  -- max_prompt_tokens: a tighter limit, named
  local short = write("short.jsonl", lt.json.encode{ question = "What is 1+1?", answer = "2" } .. "\n" ..
                                     lt.json.encode{ question = string.rep("big dog ", 40), answer = "3" } .. "\n")
  o.data, o.max_prompt_tokens = short, 30
  T.raises(function() lt.rl.grpo(m, o) end, "short%.jsonl:2: the prompt is %d+ tokens, longer than 30 %(max_prompt_tokens%)")
  T.raises(function() lt.rl.rollout(m, { "hi", long }, { max_response = 4 }) end,
           "lt%.rl%.rollout: prompt 2: the prompt is %d+ tokens, longer than 2044")
  T.raises(function() lt.rl.accuracy(m, { { question = "q", answer = "1" }, { id = "x", question = long, answer = "1" } },
                                     { max_response = 4 }) end,
           "lt%.rl%.accuracy: item 2 %(id x%): the prompt is %d+ tokens")
  T.raises(function() lt.rl.rollout(m, { "hi" }, { max_response = 4096 }) end, "max_response 4096 leaves no room for a prompt")
end)

T.case("math answers: a worked solution without its final-answer marker is refused by file:line", function()
  -- RL prompt sets: "#### N", \boxed{N} and bare answers are read; a bare worked solution is not
  local good = write("answers.jsonl", table.concat({
    lt.json.encode{ question = "q1", answer = "Natalia sold 48/2 = <<48/2=24>>24 clips.\nSo 48+24 = 72.\n#### 72" },
    lt.json.encode{ question = "q2", answer = "$\\boxed{\\frac{1}{2}}$" },
    lt.json.encode{ question = "q3", answer = 7 },
    lt.json.encode{ question = "q4", answer = "\\left( 3, \\frac{\\pi}{2} \\right)" } }, "\n") .. "\n")
  local bad = write("worked.jsonl", lt.json.encode{ question = "q1", answer = "1" } .. "\n" ..
                    lt.json.encode{ question = "q2", answer = "Natalia sold 24 clips in May.\nSo 72 in all." } .. "\n")
  T.raises(function() lt.rl.prompts(bad) end,
           "worked%.jsonl:2: field 'answer' is a worked solution %(2 lines%) without its final%-answer marker")
  local items = lt.rl.prompts(good)
  T.same_table({ items[1].answer, items[2].answer, items[3].answer, items[4].answer },
               { "72", "\\frac{1}{2}", "7", "\\left( 3, \\frac{\\pi}{2} \\right)" })
  local calc = write("calc.jsonl", lt.json.encode{ question = "q", answer = "48/2 = <<48/2=24>>24" } .. "\n")
  T.raises(function() lt.rl.prompts(calc) end, "calc%.jsonl:1: field 'answer' is a worked solution")
  local empty = write("emptybox.jsonl", lt.json.encode{ question = "q", answer = "so \\boxed{}" } .. "\n")
  T.raises(function() lt.rl.prompts(empty) end, "emptybox%.jsonl:1: field 'answer': its \\boxed{} is empty")
end)

T.case("math answers (issue 34): a one-line sentence, several markers, and an --eval sentence are refused", function()
  -- training data (lt.rl.prompts, which lt.rl.grpo's data goes through): a sentence is no final answer
  local sentence = write("sentence.jsonl", lt.json.encode{ question = "q1", answer = "2" } .. "\n" ..
                         lt.json.encode{ question = "What is 1+1?", answer = "We add 1 and 1 to get 2." } .. "\n")
  T.raises(function() lt.rl.prompts(sentence) end,
           "sentence%.jsonl:2: field 'answer' is a sentence %(5 words%) without its final%-answer marker: expected \"#### ANSWER\"")
  -- several markers: which one is meant is a guess (before: the last, "4")
  local several = write("several.jsonl", lt.json.encode{ question = "q", answer = "2 #### 3 #### 4" } .. "\n")
  T.raises(function() lt.rl.prompts(several) end,
           "several%.jsonl:1: field 'answer' has 2 final%-answer markers %(2 \"####\", 0 \\boxed{}%)")
  local boxes = write("boxes.jsonl", lt.json.encode{ question = "q", answer = "\\boxed{2} or \\boxed{3}" } .. "\n")
  T.raises(function() lt.rl.prompts(boxes) end, "boxes%.jsonl:1: field 'answer' has 2 final%-answer markers")
  -- the GSM8K benchmark reader takes the same rule
  local g = write("gsm_several.jsonl", lt.json.encode{ question = "q", answer = "So 2.\n#### 3 #### 4" } .. "\n")
  T.raises(function() lt.eval.load("gsm8k", g) end, "gsm_several%.jsonl:1: field 'answer' has 2 final%-answer markers")
  local tail = write("gsm_tail.jsonl", lt.json.encode{ question = "q", answer = "#### we add them and get 4" } .. "\n")
  T.raises(function() lt.eval.load("gsm8k", tail) end,
           "gsm_tail%.jsonl:1: field 'answer': the text after its \"####\" is not a final answer %(1 line, 5 words%)")
  -- an --eval file of the GRPO study (lt.tasks.math.heldout): an answer no prediction could equal
  local heldout = write("heldout.jsonl", lt.json.encode{ question = "Add 1 and 1.", answer = "We add them: two" } .. "\n")
  T.raises(function() require("lt.tasks.math").heldout(heldout, 0) end,
           "heldout%.jsonl:1: field 'answer' is a sentence %(4 words%) without its final%-answer marker")
  -- short answers with words still read: units, \text{}, a two-word answer
  local ok = write("short_words.jsonl", table.concat({
    lt.json.encode{ question = "q1", answer = "18 dollars" },
    lt.json.encode{ question = "q2", answer = "\\text{Evelyn and Devon}" },
    lt.json.encode{ question = "q3", answer = "no solution" },
    lt.json.encode{ question = "q4", answer = "x^2 + 7x + \\sqrt{10}" },
    lt.json.encode{ question = "q5", answer = "It is 4.\n#### 4" } }, "\n") .. "\n")
  local items = lt.rl.prompts(ok)
  T.same_table({ items[1].answer, items[2].answer, items[3].answer, items[4].answer, items[5].answer },
               { "18 dollars", "\\text{Evelyn and Devon}", "no solution", "x^2 + 7x + \\sqrt{10}", "4" })
  local _, evals = require("lt.tasks.math").heldout(ok, 0)
  T.eq(evals[5].answer, "4")
end)

T.case("lt.model.hybrid: an embedding donor without tokenizer.json gives a warning, kept in the result", function()
  local notok = tmp .. "/m23_notok"
  os.execute(("rm -rf '%s' && cp -r '%s' '%s' && rm '%s/tokenizer.json'"):format(notok, m23, notok, notok))
  local r = lt.model.hybrid{ out = tmp .. "/h23", embed = notok, head = m23, layers = { { from = notok, layer = 0 } } }
  T.eq(#r.warnings, 1)
  T.ok(r.warnings[1]:find("the embedding donor " .. notok .. " has no tokenizer.json", 1, true), r.warnings[1])
  T.ok(r.warnings[1]:find("donor " .. m23 .. " has one, but it is not copied", 1, true), r.warnings[1])
  T.ok(not io.open(tmp .. "/h23/tokenizer.json"), "written without one")
  T.eq(#lt.model.hybrid{ out = tmp .. "/h23b", embed = m23, layers = { { from = m23, layer = 0 } } }.warnings, 0)
end)

T.case("math benchmark (MATH-500 layout): the same rule on its answer field", function()
  local m5 = write("math_bad.jsonl", lt.json.encode{ problem = "p1", answer = "\\frac{1}{2}" } .. "\n" ..
                   lt.json.encode{ problem = "p2", answer = "We compute 3/6.\nIt is 1/2." } .. "\n")
  T.raises(function() lt.eval.load("math500", m5) end,
           "math_bad%.jsonl:2: field 'answer' is a worked solution %(2 lines%) without its final%-answer marker")
  local m6 = write("math_ok.jsonl", lt.json.encode{ problem = "p1", answer = "\\frac{1}{2}" } .. "\n" ..
                   lt.json.encode{ problem = "p2", answer = "Thus \\boxed{5}" } .. "\n")
  local e = lt.eval.load("math500", m6)
  T.same_table({ e[1].answer, e[2].answer }, { "\\frac{1}{2}", "5" })
end)

T.finish()

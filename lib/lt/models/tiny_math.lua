-- lt/models/tiny_math.lua: the recipe of the embedded default policy of the RL studies
-- (grpo.lua, layer_scan.lua): a tiny Qwen3 with its own BPE tokenizer (single digits),
-- pre-trained on CPU in a few minutes on seeded arithmetic word problems whose solutions end
-- "#### N", to a middling accuracy. lt.models.get("tiny-math") makes it with the fixed seed 1.
-- The problems: a + b (a, b up to --add_max), a − b (a from 10 to --sub_max), a × b (2 to
-- --mul_max): single-digit facts by default, few enough (about 270) that pre-training meets
-- each many times and the RL prompts cover them all. A share --slip of the pre-training
-- solutions use the wrong operation (a − b for "gets b more", a + b for the others), as a
-- corpus with careless worked solutions would: the model learns the facts but picks the
-- operation unreliably, which is what a reward on the answer can correct.
-- Writes OUT (the model) with train.jsonl and test.jsonl next to it: prompt sets in the GSM8K
-- layout ({"question", "answer": "... #### N"}, always the right answer) for the RL study
-- (lt.tasks.math); no test question is among the pre-training documents or train.jsonl.
local study = require "lt.study"
local M = {}

M.args = study.merge_args(
  study.train_args{ steps = 600, lr = 3e-3, warmup = 0.05, seq_len = 64, micro_batch = 16, eval_every = 200 },
  study.checkpoint_args,
  study.model_args{ layers = 4, vocab = 512 },
  { out = { "models/tiny-math", "the model folder to write" },
    docs = { 20000, "pre-training documents (worked problems)", int = true, min = 1 },
    rl_prompts = { 2000, "problems in train.jsonl (the RL prompts)", int = true, min = 1 },
    test = { 200, "held-out problems in test.jsonl", int = true, min = 1 },
    add_max = { 9, "largest addend", int = true, min = 1 },
    sub_max = { 18, "largest minuend (from 10)", int = true, min = 10 },
    mul_max = { 9, "largest factor", int = true, min = 2 },
    slip = { 0.4, "share of pre-training solutions with the wrong operation", min = 0, max = 1 } })

-- make(cfg): cfg as M.args; cfg.seed (a number) fixes the problems, model init, packing and
-- data order, else they come from the run's seed streams. Returns the training result.
function M.make(cfg)
  local checkpoints = study.checkpoints(cfg)()
  -- a seeded generator (an LCG, so that the problems are the same on every platform)
  local state = (cfg.seed or lt.run.seed("tasks.math") % 2147483647) * 7919 + 17
  local function rand(n)  -- 1 .. n
    state = (state * 1103515245 + 12345) % 2147483648
    return math.floor(state / 65536) % n + 1
  end
  local names = { "Tom", "Anna", "Ben", "Maria", "Sam", "Lily", "Omar", "Zoe", "Kai", "Ivy" }
  local things = { "apples", "pens", "books", "coins", "stickers", "cards", "eggs", "shells" }
  -- one problem: question text, worked solution line, answer, and the slip: the solution line
  -- and answer of the wrong operation (a − b for "gets b more", a + b for the others)
  local function problem()
    local n, t = names[rand(#names)], things[rand(#things)]
    local kind = rand(3)
    if kind == 1 then
      local a, b = rand(cfg.add_max), rand(cfg.add_max)
      local hi, lo = math.max(a, b), math.min(a, b)
      return ("%s has %d %s. %s gets %d more %s. How many %s does %s have now?"):format(n, a, t, n, b, t, t, n),
             ("%d + %d = %d"):format(a, b, a + b), a + b, ("%d - %d = %d"):format(hi, lo, hi - lo), hi - lo
    elseif kind == 2 then
      local a = 9 + rand(cfg.sub_max - 9)
      local b = rand(a)
      return ("%s has %d %s and gives away %d. How many %s are left?"):format(n, a, t, b, t),
             ("%d - %d = %d"):format(a, b, a - b), a - b, ("%d + %d = %d"):format(a, b, a + b), a + b
    end
    local a, b = 1 + rand(cfg.mul_max - 1), 1 + rand(cfg.mul_max - 1)
    return ("%s has %d boxes with %d %s in each box. How many %s are there in all?"):format(n, a, b, t, t),
           ("%d * %d = %d"):format(a, b, a * b), a * b, ("%d + %d = %d"):format(a, b, a + b), a + b
  end

  -- the held-out test set first, then everything else avoids its questions
  local test, held = {}, {}
  while #test < cfg.test do
    local q, sol, ans = problem()
    if not held[q] then
      held[q] = true
      test[#test + 1] = { question = q, answer = sol .. "\n#### " .. ans }
    end
  end
  local work = cfg.out .. ".work"
  lt.fs.remove(work)  -- lt.fs: no shell; refuses a folder that ltrun did not make
  lt.fs.mkdir(work)
  local corpus = assert(io.open(work .. "/math.txt", "w"))
  local n_docs = 0
  while n_docs < cfg.docs do
    local q, sol, ans, slip_sol, slip_ans = problem()
    if not held[q] then
      if rand(1000) <= cfg.slip * 1000 then sol, ans = slip_sol, slip_ans end
      corpus:write("Question: ", q, "\nAnswer: ", sol, "\n#### ", ans, "\n%\n")
      n_docs = n_docs + 1
    end
  end
  corpus:close()
  local rl_train = {}
  while #rl_train < cfg.rl_prompts do
    local q, sol, ans = problem()
    if not held[q] then rl_train[#rl_train + 1] = { question = q, answer = sol .. "\n#### " .. ans } end
  end
  lt.run.param{ pretrain_docs = n_docs }

  local m, r, packed = require("lt.models").pretrain(cfg, work .. "/math.txt", checkpoints)
  lt.run.param{ train_tokens = packed.train_tokens, val_tokens = packed.val_tokens }
  local function write_jsonl(path, rows)
    local f = assert(io.open(path, "w"))
    for _, row in ipairs(rows) do f:write(lt.json.encode(row), "\n") end
    f:close()
  end
  write_jsonl(cfg.out .. "/train.jsonl", rl_train)
  write_jsonl(cfg.out .. "/test.jsonl", test)
  lt.run.artifact(cfg.out .. "/model.safetensors", { kind = "model" })
  lt.fs.remove(work)
  print(("pretrain_math: %s: %d params, %d steps, %.0f tokens/s, %.1fs, val loss %.3f"):format(
    cfg.out, m:n_params(), r.steps, r.tokens_per_s, r.wall_s, r.val_loss or -1))
  return r
end

return M

-- lt/models/tiny_code.lua: the recipe of the embedded default policy of the code RL study
-- (code_rl.lua): a tiny Qwen3 with its own BPE tokenizer, pre-trained on CPU in about a minute
-- on seeded one-line Python functions written from a short spec, in HumanEval's layout:
--   def calc(x):
--       """Return x plus 3."""
--       return x + 3
-- Seven kinds (plus, minus, times, remainder, more than, first n items, without the first n
-- items), a constant n from 1 to 9 and a function name from a list. A share --slip of the
-- pre-training solutions use the wrong operation (x - n for "plus", xs[n:] for "the first n
-- items", ...), as a corpus of careless code would: the model learns the layout and the
-- constants but picks the operation unreliably, which a reward from the tests can correct.
-- lt.models.get("tiny-code") makes it with the fixed seed 1. Writes OUT (the model) with
-- train.jsonl (the RL tasks) and test.jsonl (held-out tasks) next to it in HumanEval's JSONL
-- (task_id, prompt, canonical_solution, test, entry_point; lt.tasks.code reads them): no
-- held-out prompt is among the pre-training documents or train.jsonl.
local study = require "lt.study"
local M = {}

M.args = study.merge_args(
  study.train_args{ steps = 500, lr = 3e-3, warmup = 0.05, seq_len = 64, micro_batch = 16, eval_every = 250 },
  study.checkpoint_args,
  study.model_args{ layers = 4, vocab = 512 },
  { out = { "models/tiny-code", "the model folder to write" },
    docs = { 12000, "pre-training documents (spec and solution)", int = true, min = 1 },
    test = { 96, "held-out tasks in test.jsonl", int = true, min = 1 },
    slip = { 0.4, "share of pre-training solutions with the wrong operation", min = 0, max = 1 } })

-- kind: docstring ({n} the constant), argument, right and slipped body, test inputs
local kinds = {
  { "Return x plus {n}.", "x", "x + {n}", "x - {n}", { "3", "7", "10" } },
  { "Return x minus {n}.", "x", "x - {n}", "x + {n}", { "3", "7", "10" } },
  { "Return x times {n}.", "x", "x * {n}", "x + {n}", { "3", "7", "10" } },
  { "Return the remainder of x divided by {n}.", "x", "x % {n}", "x // {n}", { "17", "23", "40" }, min = 2 },
  { "Return True when x is more than {n}.", "x", "x > {n}", "x < {n}", { "{n} - 1", "{n} + 1", "{n} + 4" } },
  { "Return the first {n} items of xs.", "xs", "xs[:{n}]", "xs[{n}:]",
    { "list(range(10))", "[5, 3, 8, 1, 9, 2, 7, 4, 6, 0]", "list(range(20, 32))" } },
  { "Return xs without its first {n} items.", "xs", "xs[{n}:]", "xs[:{n}]",
    { "list(range(10))", "[5, 3, 8, 1, 9, 2, 7, 4, 6, 0]", "list(range(20, 32))" } },
}
local names = { "f", "g", "calc", "solve", "apply", "compute", "value", "step" }

-- Every task, in a fixed order: {id, prompt, canonical_solution, test, entry_point, slip}
-- (slip: the wrong body). The test checks the function at three inputs against the right
-- body evaluated in Python.
function M.tasks()
  local out = {}
  for ki, k in ipairs(kinds) do
    for n = k.min or 1, 9 do
      for _, name in ipairs(names) do
        local function fill(s) return (s:gsub("{n}", tostring(n))) end
        local prompt = ('def %s(%s):\n    """%s"""\n'):format(name, k[2], fill(k[1]))
        local asserts = {}
        for _, input in ipairs(k[5]) do
          local x = fill(input)
          asserts[#asserts + 1] = ("    %s = %s\n    assert candidate(%s) == (%s)\n"):format(k[2], x, k[2], fill(k[3]))
        end
        out[#out + 1] = { task_id = ("TinyCode/%d/%d/%s"):format(ki, n, name), entry_point = name, prompt = prompt,
                          canonical_solution = "    return " .. fill(k[3]) .. "\n",
                          test = "def check(candidate):\n" .. table.concat(asserts), slip = "    return " .. fill(k[4]) .. "\n" }
      end
    end
  end
  return out
end

-- make(cfg): cfg as M.args; cfg.seed (a number) fixes the split, the documents, model init,
-- packing and data order, else they come from the run's seed streams.
function M.make(cfg)
  local checkpoints = study.checkpoints(cfg)()
  local state = (cfg.seed or lt.run.seed("tasks.code") % 2147483647) * 7919 + 17
  local function rand(n)  -- 1 .. n, an LCG: the same tasks on every platform
    state = (state * 1103515245 + 12345) % 2147483648
    return math.floor(state / 65536) % n + 1
  end
  local tasks = M.tasks()
  if cfg.test >= #tasks then error(("tiny_code: --test=%d: there are only %d tasks"):format(cfg.test, #tasks), 0) end
  for i = #tasks, 2, -1 do local j = rand(i); tasks[i], tasks[j] = tasks[j], tasks[i] end  -- Fisher-Yates
  local test, train = {}, {}
  for i, t in ipairs(tasks) do if i <= cfg.test then test[#test + 1] = t else train[#train + 1] = t end end

  local work = cfg.out .. ".work"
  lt.fs.remove(work)
  lt.fs.mkdir(work)
  local corpus = assert(io.open(work .. "/code.txt", "w"))
  for _ = 1, cfg.docs do
    local t = train[rand(#train)]
    corpus:write(t.prompt, rand(1000) <= cfg.slip * 1000 and t.slip or t.canonical_solution, "%\n")
  end
  corpus:close()

  local m, r, packed = require("lt.models").pretrain(cfg, work .. "/code.txt", checkpoints)
  lt.run.param{ pretrain_docs = cfg.docs, train_tokens = packed.train_tokens, rl_tasks = #train, test_tasks = #test }
  local function write_jsonl(path, rows)
    local f = assert(io.open(path, "w"))
    for _, t in ipairs(rows) do
      f:write(lt.json.encode{ task_id = t.task_id, prompt = t.prompt, canonical_solution = t.canonical_solution,
                              test = t.test, entry_point = t.entry_point }, "\n")
    end
    f:close()
  end
  write_jsonl(cfg.out .. "/train.jsonl", train)
  write_jsonl(cfg.out .. "/test.jsonl", test)
  lt.run.artifact(cfg.out .. "/model.safetensors", { kind = "model" })
  lt.fs.remove(work)
  print(("tiny_code: %s: %d params, %d steps, %.0f tokens/s, %.1fs, val loss %.3f"):format(
    cfg.out, m:n_params(), r.steps, r.tokens_per_s, r.wall_s, r.val_loss or -1))
  return r
end

return M

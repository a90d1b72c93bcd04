-- lt/scan_task.lua: the task of the layer-scan studies (layer_scan.lua, layer_strategies.lua)
-- on the embedded default: WordNet adjective antonym pairs, 4 of every 5 written as training
-- texts (4-way questions with their answer letter), every 5th held out for the benchmark
-- `antonyms_heldout`; plus any lt.eval benchmark. S = the mean accuracy over the benchmarks.
--   local task = require("lt.scan_task").new(cfg)  -- cfg.model, data, bench, bench_limit, work
--   task.training_data() → packed corpus folder; task.score(m[, seed]) → S (logged)
local tasks = require "lt.tasks"
local M = {}

local function split_pairs()
  local all = tasks.wordnet_pairs(tasks.wordnet_dir .. "/data.adj")
  local train, held = {}, {}
  for i, p in ipairs(all) do
    if i % 5 == 0 then held[#held + 1] = p else train[#train + 1] = p end
  end
  return train, held
end
M.split_pairs = split_pairs

-- n 4-way items "Which word means the opposite of X?" from `pairs` (distractors from them too),
-- drawn with a seeded generator; ids prefix .. 0, 1, ...
function M.mc_items(pairs_, n, seed, prefix)
  local pick = tasks.generator(seed)
  local items, used = {}, {}
  n = math.min(n, #pairs_)
  while #items < n do
    local i = pick(#pairs_)
    if not used[i] then
      used[i] = true
      local q, a = pairs_[i][1], pairs_[i][2]
      if pick(2) == 2 then q, a = a, q end
      local choices, seen = { a }, { [a] = true, [q] = true }
      while #choices < 4 do
        local other = pairs_[pick(#pairs_)][pick(2)]
        if not seen[other] then seen[other] = true; choices[#choices + 1] = other end
      end
      local slot = pick(4)
      choices[1], choices[slot] = choices[slot], choices[1]
      items[#items + 1] = { id = prefix .. #items, bench = "mcq", subject = "antonyms", category = "lexical",
                            question = ('Which word means the opposite of "%s"?'):format(q),
                            choices = choices, answer = string.char(64 + slot) }
    end
  end
  return items
end

-- the benchmark name as stored in eval_items and its protocol
function M.bench_name(bench)
  local name = bench:match("^(%w+):") or bench
  local gen = name == "gsm8k" or name == "math"
  return name, gen and "generate" or "logit", gen and "math" or "exact"
end

function M.new(cfg)
  local t = {}
  local function mkdir(p) require("lt.scan").mkdir(p) end

  -- the packed training texts (made once, before workers read them)
  function t.training_data()
    local dir = cfg.work .. "/data"
    local f = io.open(dir .. "/index.json")
    if f then f:close(); return dir end
    assert(cfg.data == "antonyms", ("--data=%s: the layer-scan task knows `antonyms` only"):format(cfg.data))
    mkdir(cfg.work)
    local train = split_pairs()
    local path = cfg.work .. "/train.jsonl"
    local out = assert(io.open(path, "w"))
    for _, it in ipairs(M.mc_items(train, #train, 2, "train/")) do
      out:write(lt.json.encode{ text = lt.eval.prompt(it) .. " " .. it.answer }, "\n")
    end
    out:close()
    lt.data.pack{ tokenizer = cfg.model, inputs = { path }, out = dir, val = 0.02, seed = 1, progress = false }
    return dir
  end

  -- S: mean accuracy over cfg.bench (comma-separated), each logged as score/<bench>;
  -- `seed` picks the held-out sample (repeated evaluations), default 1
  function t.score(m, seed)
    local sum, n = 0, 0
    for bench in cfg.bench:gmatch("[^,]+") do
      local acc
      if bench == "antonyms_heldout" then
        local _, held = split_pairs()
        acc = lt.eval.score(m, M.mc_items(held, cfg.bench_limit, seed or 1, "heldout/"), {},
                            { protocols = { "logit" }, bench = bench }).logit.acc
      else
        local _, protocol = M.bench_name(bench)
        acc = lt.eval.run(m, bench, { limit = cfg.bench_limit, protocols = { protocol }, seed = seed })[protocol].acc
      end
      lt.run.log("score/" .. bench, acc)
      sum, n = sum + acc, n + 1
    end
    assert(n > 0, "--bench names no benchmark")
    lt.run.log("score", sum / n)
    return sum / n
  end

  -- the causal-LM trainer on the task's texts; o: lr_mult, checkpoint_dir, resume, stop_after
  function t.train_causal_lm(m, o)
    return lt.train.causal_lm(m, { data = t.training_data(), steps = cfg.steps, lr = cfg.lr, warmup = cfg.warmup,
                                   seq_len = cfg.seq_len, micro_batch = cfg.micro_batch, weight_decay = 0.01,
                                   betas = { 0.9, 0.95 }, clip = 1.0, seed = 7, lr_mult = o.lr_mult,
                                   checkpoint_dir = o.checkpoint_dir,
                                   checkpoint_every = o.checkpoint_dir and cfg.eval_every or nil,
                                   resume = o.resume, stop_after = o.stop_after })
  end

  -- the training function of cfg.algo; GRPO needs lt.rl (issue 14)
  function t.trainer()
    if cfg.algo == "grpo" or cfg.algo == "dr_grpo" then
      if not lt.rl then
        error(("--algo=%s needs lt.rl (GRPO, issue 14), which this build does not have; use --algo=causal_lm"):format(cfg.algo), 0)
      end
      error(("--algo=%s: the layer scan is not wired to lt.rl yet"):format(cfg.algo), 0)
    end
    if cfg.algo ~= "causal_lm" then error(("--algo=%s: expected causal_lm, grpo or dr_grpo"):format(cfg.algo), 0) end
    return t.train_causal_lm
  end

  -- trains m with `o` (lr_mult); with cfg.eval_every > 0 scores it every so many steps and
  -- logs the best score as S (best checkpoint by score), else scores it once at the end
  function t.train_and_score(m, o)
    o = o or {}
    local fn = t.trainer()
    if (cfg.eval_every or 0) <= 0 then
      fn(m, o)
      return t.score(m)
    end
    local dir = ("%s/ckpt/%d"):format(cfg.work, lt.run.id())
    mkdir(dir)  -- marked as ltrun's, so that remove_tree below may delete it
    local best, best_step = -math.huge, 0
    for stop = cfg.eval_every, cfg.steps + cfg.eval_every - 1, cfg.eval_every do
      local at = math.min(stop, cfg.steps)
      fn(m, { lr_mult = o.lr_mult, checkpoint_dir = dir, resume = true, stop_after = at })
      local s = t.score(m)
      lt.run.log("score_at", s, { step = at })
      if s > best then best, best_step = s, at end
    end
    lt.run.log("score", best)
    lt.run.param("best_step", best_step)
    require("lt.scan").remove_tree(dir)
    return best
  end

  return t
end

return M

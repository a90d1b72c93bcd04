-- lt/scan/task/code.lua: the code task of a layer scan (--task=code): GRPO (or Dr. GRPO) with the
-- sandboxed test reward on HumanEval-layout tasks, S = held-out pass@1, each as
-- experiments/code_rl/code_rl.lua does it (lt.tasks.code: code.reward_fn for the reward, code.score
-- for S; --reward, --tests, --timeout by code_rl's names). S per benchmark: pass@1 over
-- --score_samples answers sampled at --score_temperature (code_rl's "pass@1 sampled"), the greedy
-- pass@1 logged beside it as score/<bench>/greedy (code_rl's "pass@1 greedy"); with
-- --score_samples=0 S is the greedy one. Benchmarks: code_heldout (the model folder's test.jsonl),
-- humaneval:FILE, mbpp:FILE; their first --bench_limit tasks (code_rl's --eval_n). Training data:
-- --data=code (the model folder's train.jsonl) or a HumanEval/MBPP JSONL, less any task whose
-- prompt is a held-out one's. Refuses where lt.sandbox cannot run programs.
--   require("lt.scan.task.code").extend(cfg, t)  -- t: lt.scan.task.new's table
local code = require "lt.tasks.code"
local M = {}

-- the tasks of one benchmark of --bench, in file order, cut to cfg.bench_limit
local function bench_items(cfg, bench)
  local path, format
  if bench == "code_heldout" then path = cfg.model .. "/test.jsonl"
  else
    local kind, p = bench:match("^(%w+):(.+)$")
    if kind == "humaneval" or kind == "mbpp" then path, format = p, kind end
  end
  if not path then
    error(("--bench=%s: '%s' is not a code benchmark (code_heldout, humaneval:FILE, mbpp:FILE)"):format(cfg.bench, bench), 0)
  end
  local f = io.open(path)
  if not f then error(("--bench=%s: no task file %s"):format(bench, path), 0) end
  f:close()
  local items = code.read(path, { format = format })
  for i = #items, cfg.bench_limit + 1, -1 do items[i] = nil end
  return items
end

function M.extend(cfg, t)
  local train
  -- the training tasks (read once per process; errors name file:line)
  function t.training_data()
    if train then return train end
    local path = cfg.data == "code" and (cfg.model .. "/train.jsonl") or cfg.data
    local f = io.open(path)
    if not f then
      error(("--data=%s: no task file %s (the code task reads HumanEval/MBPP JSONL, or with `code` the model "
             .. "folder's train.jsonl as the tiny_code recipe writes it)"):format(cfg.data, path), 0)
    end
    f:close()
    local held = {}
    for bench in cfg.bench:gmatch("[^,]+") do
      for _, it in ipairs(bench_items(cfg, bench)) do held[it.prompt] = true end
    end
    local kept, removed = {}, 0
    for _, it in ipairs(code.read(path)) do
      if held[it.prompt] then removed = removed + 1 else kept[#kept + 1] = it end
    end
    if #kept == 0 then error(("--data=%s: every task's prompt is a held-out one"):format(cfg.data), 0) end
    if lt.run.id() and removed > 0 then lt.run.param("decontaminated", removed) end
    train = kept
    return train
  end

  local function train_grpo(m, o)
    local items = t.training_data()
    local go = require("lt.scan.task").grpo_options(cfg)
    for k, v in pairs{ data = code.prompts(items), template = "{question}", decontaminate = 0, iterations = cfg.steps,
                       lr = o.lr or cfg.lr, warmup = cfg.warmup, micro_batch = cfg.micro_batch, stop = code.stop,
                       rewards = { code = code.reward_fn(items, { mode = cfg.reward, tests = cfg.tests, timeout = cfg.timeout }) },
                       lr_mult = o.lr_mult, checkpoint_dir = o.checkpoint_dir, checkpoint_every = o.checkpoint_every,
                       resume = o.resume, stop_after = o.stop_after } do
      go[k] = v
    end
    return lt.rl.grpo(m, go)
  end

  function t.trainer()
    if not lt.rl then error(("--algo=%s needs lt.rl, which this build does not have"):format(cfg.algo), 0) end
    local ok, why = lt.sandbox.available()
    if not ok then error("--task=code: no sandbox on this machine, refusing to run model code: " .. tostring(why), 0) end
    for bench in cfg.bench:gmatch("[^,]+") do bench_items(cfg, bench) end  -- a bad --bench fails here, once
    t.training_data()
    return train_grpo
  end

  -- S: the mean over cfg.bench of pass@1 (see above); rep: a repetition's own sample seed
  function t.score(m, rep)
    local seed = rep and lt.run.seed("eval.repeat", rep) or lt.run.seed("eval")
    local o = { tests = cfg.tests, timeout = cfg.timeout, max_new_tokens = cfg.max_response }
    local sum, n = 0, 0
    for bench in cfg.bench:gmatch("[^,]+") do
      local items = bench_items(cfg, bench)
      local name = bench:match("^([%w_]+)")
      local acc = code.score(m, items, { bench = name .. "_greedy", temperature = 0, tests = o.tests, timeout = o.timeout,
                                         max_new_tokens = o.max_new_tokens }).code.acc
      local k = cfg.score_samples or 0
      if k > 0 then
        lt.run.log("score/" .. bench .. "/greedy", acc)
        local s = code.score(m, items, { bench = name .. "_sampled", samples = k, temperature = cfg.score_temperature or 1.0,
                                         tests = o.tests, timeout = o.timeout, max_new_tokens = o.max_new_tokens, seed = seed })
        acc = s.code.avg_at_k or s.code.acc
      end
      lt.run.log("score/" .. bench, acc)
      sum, n = sum + acc, n + 1
    end
    assert(n > 0, "--bench names no benchmark")
    lt.run.log("score", sum / n)
    return sum / n
  end

end

-- the code task's settings in a scan key
function M.key_parts(cfg)
  return { "task=code", "reward=" .. tostring(cfg.reward), "tests=" .. tostring(cfg.tests) }
end

return M

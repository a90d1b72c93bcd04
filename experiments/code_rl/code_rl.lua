-- experiments/code_rl/code_rl.lua: RL on code with rewards from tests run in the sandbox
-- (lt.sandbox, lt.tasks.code): GRPO on HumanEval-layout tasks, held-out pass@1 (greedy and sampled)
-- and pass@k (the unbiased estimator) before and after, each compared item by item (items up and
-- down, sign test: lt.report.paired). Defaults: the embedded policy (lt.models tiny-code) on its
-- one-line Python functions; the reward is the share of a task's tests passed. Refuses to run where
-- the sandbox cannot be made (lt.sandbox.available() says why): never unsandboxed.
local exp = require "lt.study"
local report = require "lt.report"
local code = require "lt.tasks.code"

return exp.study{
  name = "code_rl",
  help = "GRPO with sandboxed test rewards on code tasks, held-out pass@1 / pass@k before and "
         .. "after",
  args = {
    model = { "", "policy folder (\"\": lt.models tiny-code)", path = true },
    data = { "", "RL tasks, HumanEval/MBPP JSONL (\"\": MODEL/train.jsonl)", path = true },
    eval = { "", "held-out tasks (\"\": MODEL/test.jsonl)", path = true },
    eval_n = { 0, "held-out tasks used (0: all)", int = true, min = 0 },
    steps = { 60, "rollout batches (optimizer steps)", int = true, min = 1 },
    lr = { 1e-4, "learning rate", min = 0 },
    prompts = { 16, "prompts per batch", int = true, min = 1 },
    group_size = { 8, "samples per prompt", int = true, min = 2 },
    max_response = { 16, "response tokens at most", int = true, min = 1 },
    temperature = { 1.0, "sampling temperature", min = 0 },
    reward = { "share", "share of tests passed, or 1 when all pass", choices = { "share", "all" } },
    tests = { "base", "which tests (EvalPlus: base or base+plus inputs; MBPP: + challenge tests)",
              choices = { "base", "plus" } },
    samples = { 8, "sampled answers per held-out task (pass@1, pass@k)", int = true, min = 1 },
    k = { 4, "k of pass@k (at most --samples)", int = true, min = 1 },
    timeout = { 10, "seconds per program", min = 0.1 },
    micro_batch = { 32, "sequences per pass", int = true, min = 1 } },
  run = function(cfg)
    local ok, why = lt.sandbox.available()
    if not ok then
      error("code_rl: no sandbox on this machine, refusing to run model code: " .. tostring(why), 0)
    end
    if cfg.k > cfg.samples then
      error(("code_rl: --k=%d is more than --samples=%d"):format(cfg.k, cfg.samples), 0)
    end
    local model = lt.models.resolve(cfg.model, "tiny-code")
    local train = code.read(cfg.data ~= "" and cfg.data or model .. "/train.jsonl")
    local held = code.read(cfg.eval ~= "" and cfg.eval or model .. "/test.jsonl")
    if cfg.eval_n > 0 and cfg.eval_n < #held then
      for i = #held, cfg.eval_n + 1, -1 do held[i] = nil end
    end
    local m = lt.model.load(model):train_only("all")
    local o = { tests = cfg.tests, timeout = cfg.timeout, max_new_tokens = cfg.max_response }
    local function score(when)
      local g = code.score(m, held, { bench = when .. "_greedy", temperature = 0, tests = o.tests,
                                      timeout = o.timeout, max_new_tokens = o.max_new_tokens })
      local s = code.score(m, held, { bench = when .. "_sampled", samples = cfg.samples, k = cfg.k,
                                      temperature = cfg.temperature, tests = o.tests,
                                      timeout = o.timeout, max_new_tokens = o.max_new_tokens })
      local ok_items = {}
      for i, r in ipairs(g.items) do ok_items[i] = r.correct end
      return { greedy = g.code.acc, ok = ok_items, p1 = s.code.avg_at_k or s.code.acc,
               pk = s.code.pass_at_k or s.code.acc, per = s.per }
    end
    local before = score("base")
    local r = lt.rl.grpo(m, {
      data = code.prompts(train), template = "{question}", decontaminate = 0,
      iterations = cfg.steps, prompts = cfg.prompts, group_size = cfg.group_size,
      max_response = cfg.max_response, temperature = cfg.temperature, lr = cfg.lr,
      micro_batch = cfg.micro_batch, stop = code.stop,
      rewards = { code = code.reward_fn(train, { mode = cfg.reward, tests = cfg.tests,
                                                 timeout = cfg.timeout }) } })
    local after = score("final")
    print(("code_rl: %d GRPO steps in %.0fs on %d tasks; held-out: %d tasks, %d samples each at "
           .. "temperature %g"):format(r.steps, r.wall_s, #train, #held, cfg.samples,
                                       cfg.temperature))
    print(("code_rl: pass@1 greedy:  %.3f -> %.3f (%s)"):format(before.greedy, after.greedy,
      select(4, report.paired("greedy", before.ok, after.ok))))
    print(("code_rl: pass@1 sampled: %.3f -> %.3f (%s)"):format(before.p1, after.p1,
      select(4, report.paired("sampled", before.per, after.per))))
    print(("code_rl: pass@%d:         %.3f -> %.3f"):format(cfg.k, before.pk, after.pk))
    return { before = before, after = after, result = r }
  end }

-- experiments/code_rl/code_rl.lua: RL on code with rewards from tests run in the sandbox
-- (lt.sandbox, lt.tasks.code): GRPO on HumanEval-layout tasks, held-out pass@1 (greedy and sampled)
-- and pass@k (the unbiased estimator) before and after, each compared item by item (items up and
-- down, sign test: lt.report.paired). Its args are lt.rl.grpo's options (defaults overridden in
-- one line) and its own. Defaults: the embedded policy (lt.models tiny-code) on its one-line
-- Python functions; the reward is the share of a task's tests passed. Refuses to run where the
-- sandbox cannot be made (lt.sandbox.available() says why): never unsandboxed.
local study = require "lt.study"
local report = require "lt.report"
local code = require "lt.tasks.code"

local grpo_args = { data = "", eval = "", iterations = 60, lr = 1e-4, prompts = 16,
  max_response = 16, micro_batch = 32, template = "{question}", decontaminate = 0 }

return study.study{
  name = "code_rl",
  help = "GRPO with sandboxed test rewards on code tasks, held-out pass@1 / pass@k before and "
         .. "after",
  args = study.merge_args(study.args_of("lt.rl.grpo", grpo_args), {
    model = { "", "policy folder (\"\": lt.models tiny-code)", path = true },
    reward = { "share", "share of tests passed, or 1 when all pass", choices = { "share", "all" } },
    tests = { "base", "which tests (EvalPlus: base or base+plus inputs; MBPP: + challenge tests)",
              choices = { "base", "plus" } },
    samples = { 8, "sampled answers per held-out task (pass@1, pass@k)", int = true, min = 1 },
    k = { 4, "k of pass@k (at most --samples)", int = true, min = 1 },
    timeout = { 10, "seconds per program", min = 0.1 } }),
  run = function(cfg)
    local ok, why = lt.sandbox.available()
    if not ok then
      error("code_rl: no sandbox on this machine, refusing to run model code: " .. tostring(why), 0)
    end
    if cfg.k > cfg.samples then
      error(("code_rl: --k=%d is more than --samples=%d"):format(cfg.k, cfg.samples), 0)
    end
    local model = lt.models.resolve(cfg.model, "tiny-code")
    local train = code.read(cfg.data or model .. "/train.jsonl")
    local held = code.read(cfg.eval or model .. "/test.jsonl")
    if cfg.eval_n > 0 then for i = #held, cfg.eval_n + 1, -1 do held[i] = nil end end
    local m = lt.model.load(model):train_only("all")
    local score = code.evaluator(m, held, { tests = cfg.tests, timeout = cfg.timeout,
      max_new_tokens = cfg.max_response, samples = cfg.samples, k = cfg.k,
      temperature = cfg.temperature })
    local before = score("base")
    local r = lt.rl.grpo(m, study.options_for("lt.rl.grpo", cfg, { data = code.prompts(train),
      eval_n = 0, stop = code.stop, rewards = { code = code.reward_fn(train,
        { mode = cfg.reward, tests = cfg.tests, timeout = cfg.timeout }) } }))
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

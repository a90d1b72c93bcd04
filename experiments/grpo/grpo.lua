-- experiments/grpo/grpo.lua: RL post-training with verifiable rewards (GRPO or Dr. GRPO) on any
-- freeze plan, scored by held-out accuracy before and after, greedy and avg@k of sampled
-- answers at the training temperature (lt.tasks.math), each compared item by item (items up
-- and down, sign test: lt.report.paired). Its args are lt.rl.grpo's options (their defaults
-- overridden in one line: 100 batches of 16 prompts x 8 samples, lr 1e-4; --kl=-1 and
-- --decontaminate=-1: the algo's and lt.tasks.math's rule) and its own: the embedded policy
-- (lt.models tiny-math) on its arithmetic problems by default; GRPO removes the wrong operation
-- pre-training slipped into 40% of its solutions, which sampled answers show (README).
local study = require "lt.study"
local report = require "lt.report"
local math_task = require "lt.tasks.math"

local grpo_args = { data = "", eval = "", eval_n = 200, lr = 1e-4, iterations = 100, prompts = 16,
  max_response = 24, micro_batch = 32, kl = -1, eval_every = 25, template = math_task.template,
  decontaminate = -1, checkpoint_every = 25 }

return study.study{
  name = "grpo",
  help = "GRPO / Dr. GRPO with the math answer reward, held-out accuracy before and after",
  args = study.merge_args(study.args_of("lt.rl.grpo", grpo_args), {
    model = { "", "policy folder (\"\": lt.models tiny-math)", path = true },
    eval_samples = { 8, "sampled answers per item for avg@k (0: off)", int = true, min = 0 },
    train_only = { "all",
                   "trained blocks: all (the whole model), 2, 0,3, middle:K", layers = true } }),
  run = function(cfg)
    math_task.check_prompt_files(cfg, { "data", "eval" })  -- a folder is named before the model
    local ck = study.checkpoints(cfg)()  -- --resume=true with nothing to resume: an error first
    local model = lt.models.resolve(cfg.model, "tiny-math")
    local m = lt.model.load(model)
    m:train_only(lt.layers.spec(m, cfg.train_only, "--train_only"))
    lt.run.param("plan", cfg.train_only)
    local items, evals = math_task.heldout(cfg.eval or model .. "/test.jsonl", cfg.eval_n)
    local score = math_task.evaluator(m, model, items, evals, {
      template = cfg.template, chat = cfg.chat, max_response = cfg.max_response,
      samples = cfg.eval_samples, temperature = cfg.temperature })
    local before = score("base", 0)
    print(("grpo: base held-out accuracy %.3f greedy%s (%d problems)"):format(before.acc,
      before.sampled and (", %.3f sampled (avg@%d, temperature %g)"):format(
        before.sampled, cfg.eval_samples, cfg.temperature) or "", #items))
    local n_gram = cfg.decontaminate >= 0 and cfg.decontaminate
                   or math_task.decontamination_ngram(cfg.data == nil and cfg.model == "")
    lt.run.param("decontaminate_ngram", n_gram)
    local r = lt.rl.grpo(m, study.options_for("lt.rl.grpo", cfg, ck, {
      data = cfg.data or model .. "/train.jsonl", eval = items, eval_n = 0, decontaminate = n_gram,
      template = math_task.prompt_template(model, cfg.template) or "",
      rewards = math_task.rewards }))
    local after = score("final", r.steps)
    print(("grpo: %s, %d steps in %.0fs, %d prompts (%d removed by decontamination)"):format(
      cfg.algo, r.steps, r.wall_s, r.prompts, r.decontaminated))
    print(("grpo: held-out accuracy, greedy:  %.3f -> %.3f (%s)"):format(before.acc, after.acc,
      select(4, report.paired("greedy", before.ok, after.ok))))
    if after.sampled then
      print(("grpo: held-out accuracy, sampled: %.3f -> %.3f (avg@%d; %s)"):format(
        before.sampled, after.sampled, cfg.eval_samples,
        select(4, report.paired("sampled", before.per, after.per))))
    end
    return { base = before.acc, final = after.acc, base_sampled = before.sampled,
             final_sampled = after.sampled, result = r }
  end }

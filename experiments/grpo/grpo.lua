-- experiments/grpo/grpo.lua: RL post-training with verifiable rewards (GRPO or Dr. GRPO) on any
-- freeze plan, scored by held-out accuracy before and after, greedy and avg@k of sampled
-- answers at the training temperature (lt.tasks.math), each compared item by item (items up
-- and down, sign test: lt.report.paired). Defaults: the embedded policy (lt.models tiny-math)
-- on its arithmetic problems, 100 batches of 16 prompts x 8 samples, lr 1e-4: GRPO removes the
-- wrong operation pre-training slipped into 40% of its solutions, which sampled answers show
-- (this folder's README). --train_only: which blocks train (lt.layers.parse's grammar: all, 2,
-- 0,3, 10-15, -1, middle:K, shallow:F, deep:F; all is the whole model).
local exp = require "lt.study"
local report = require "lt.report"
local math_task = require "lt.tasks.math"

return exp.study{
  name = "grpo",
  help = "GRPO / Dr. GRPO with the math answer reward, held-out accuracy before and after",
  args = exp.merge_args(exp.with_defaults(exp.checkpoint_args, { checkpoint_every = 25 }), {
    model = { "", "policy folder (\"\": lt.models tiny-math)", path = true },
    data = { "", "prompt JSONL (\"\": MODEL/train.jsonl)", path = true },
    eval = { "", "held-out JSONL (\"\": MODEL/test.jsonl)", path = true },
    eval_n = { 200, "held-out items", int = true, min = 1 },
    algo = { "grpo", "advantage estimator", choices = { "grpo", "dr_grpo" } },
    lr = { 1e-4, "learning rate", min = 0 },
    iterations = { 100, "rollout batches (optimizer steps)", int = true, min = 1 },
    prompts = { 16, "prompts per batch", int = true, min = 1 },
    group_size = { 8, "samples per prompt", int = true, min = 2 },
    max_response = { 24, "response tokens at most", int = true, min = 1 },
    temperature = { 1.0, "sampling temperature (training and avg@k)", min = 0 },
    n = { 0, "training prompts (0: all)", int = true, min = 0 },
    kl = { -1, "KL coefficient (< 0: the algorithm's default)" },
    epochs = { 1, "epochs per batch", int = true, min = 1 },
    mini_batches = { 1, "mini-batches per epoch", int = true, min = 1 },
    micro_batch = { 32, "sequences per pass", int = true, min = 1 },
    eval_every = { 25, "held-out accuracy every N steps (0: off)", int = true, min = 0 },
    eval_samples = { 8, "sampled answers per item for avg@k (0: off)", int = true, min = 0 },
    template = { math_task.template, "prompt template ({question}; \"default\": lt.rl's)" },
    chat = { false, "wrap prompts in the model's chat template" },
    train_only = { "all", "trained blocks (lt.layers.parse): all (whole model), 2, 0,3, middle:K" },
    decontaminate = { -1, "n-gram decontamination (0: off, < 0: lt.tasks.math's rule)",
                      int = true } }),
  run = function(cfg)
    math_task.check_prompt_files(cfg, { "data", "eval" })  -- a folder is named before the model
    local ck = exp.checkpoints(cfg)()  -- --resume=true with nothing to resume: an error first
    local model = lt.models.resolve(cfg.model, "tiny-math")
    local m = lt.model.load(model)
    m:train_only(lt.layers.spec(m, cfg.train_only, "--train_only"))
    lt.run.param("plan", cfg.train_only)
    local items, evals = math_task.heldout(cfg.eval ~= "" and cfg.eval or model .. "/test.jsonl",
                                           cfg.eval_n)
    local score = math_task.evaluator(m, model, items, evals, {
      template = cfg.template, chat = cfg.chat, max_response = cfg.max_response,
      samples = cfg.eval_samples, temperature = cfg.temperature })
    local before = score("base", 0)
    print(("grpo: base held-out accuracy %.3f greedy%s (%d problems)"):format(before.acc,
      before.sampled and (", %.3f sampled (avg@%d, temperature %g)"):format(
        before.sampled, cfg.eval_samples, cfg.temperature) or "", #items))
    local n_gram = cfg.decontaminate >= 0 and cfg.decontaminate
                   or math_task.decontamination_ngram(cfg.data == "" and cfg.model == "")
    lt.run.param("decontaminate_ngram", n_gram)
    local r = lt.rl.grpo(m, {
      data = cfg.data ~= "" and cfg.data or model .. "/train.jsonl", n = cfg.n, eval = items,
      decontaminate = n_gram, template = math_task.prompt_template(model, cfg.template),
      chat = cfg.chat, algo = cfg.algo, kl = cfg.kl >= 0 and cfg.kl or nil,
      prompts = cfg.prompts, group_size = cfg.group_size, max_response = cfg.max_response,
      temperature = cfg.temperature, epochs = cfg.epochs, mini_batches = cfg.mini_batches,
      micro_batch = cfg.micro_batch, iterations = cfg.iterations, lr = cfg.lr,
      eval_every = cfg.eval_every, rewards = math_task.rewards, checkpoint_dir = ck.checkpoint_dir,
      checkpoint_every = ck.checkpoint_every, resume = ck.resume })
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

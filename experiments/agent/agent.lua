-- experiments/agent/agent.lua: agentic RL (*Is One Layer Enough?* §3.4, Figure 5 in miniature): a
-- tiny policy acting in a text environment (lt.envs: Sokoban by default; household, the ALFWorld
-- stand-in; --env=sokoban,household runs both, a child run each), trained from the same model with
-- GiGPO (episode advantages plus step advantages of steps taken in the same state,
-- runtime/rl/gigpo.h) and with GRPO on episodes (omega = 0), one child run each; each batch is
-- --tasks seeds x --group episodes played in lockstep (lt.envs.agent), every step a row whose
-- action tokens are trained. Scored on held-out seeds (below the pre-training ones): the success
-- rate of --eval_episodes sampled episodes per seed before and after, compared per seed (up/down,
-- sign test). --train_only=2 trains block 2 alone (the single-layer setting; lt.layers.parse's
-- grammar; all: the whole model). Default policy: lt.models tiny-agent (a noisy Sokoban expert
-- imitated).
local study = require "lt.study"
local compare_env = require "experiments.agent.compare"

return study.study{
  name = "agent", help = "GiGPO against GRPO on episodes for a tiny agent in a text environment",
  args = {
    model = { "", "policy folder (\"\": the embedded default, lt.models tiny-agent)", path = true },
    env = { "sokoban",
            "environments (lt.envs; household: the ALFWorld stand-in), a comparison in each",
            list = true, choices = { "sokoban", "household" } },
    max_turns = { 0, "turns per episode at most (0: the environment's max_steps)", int = true,
                  min = 0 },
    size = { 5, "Sokoban grid size", int = true, min = 5, max = 10 },
    algos = { "gigpo,grpo", "advantages, each trained from the same model", list = true,
              choices = { "gigpo", "grpo" } },
    steps = { 20, "batches of episodes (each one optimizer step per mini-batch)", int = true,
              min = 1 },
    tasks = { 8, "seeds per batch, a group of episodes each", int = true, min = 1 },
    group = { 8, "episodes per seed", int = true, min = 2 },
    lr = { 1e-4, "learning rate", min = 0 },
    mini_batches = { 2, "optimizer steps per batch", int = true, min = 1 },
    gamma = { 0.95, "discount of the step returns", min = 0, max = 1 },
    omega = { 1.0, "GiGPO's weight of the step advantages", min = 0 },
    -- GiGPO as verl-agent computes it by default; each difference from the paper's Eq. 3 an option
    norm = { "std", "advantage normalisation (verl-agent's mean_std_norm; none: mean_norm)",
             choices = { "std", "none" } },
    scope = { "steps",
              "episode advantage's mean and std over step rows (verl-agent) or episodes (Eq. 3)",
              choices = { "steps", "episodes" } },
    lone = { "pass", "a lone episode's return: passed through (verl-agent) or zero",
             choices = { "pass", "zero" } },
    penalty = { "row",
                "invalid-action penalty on its step's row only (verl-agent) or in the reward",
                choices = { "row", "reward" } },
    train_only = { "all", "trained blocks: all (the whole model), 2, 0,3, -1", layers = true },
    heldout = { 100, "held-out seeds 1..N scored before and after", int = true, min = 1 },
    eval_episodes = { 4, "sampled episodes per held-out seed", int = true, min = 1 } },
  run = function(cfg)
    local base, seeds = lt.model.load(lt.models.resolve(cfg.model, "tiny-agent")), {}
    for s = 1, cfg.heldout do seeds[s] = s end
    local turns = cfg.max_turns > 0 and cfg.max_turns or nil
    local function compare(env) return compare_env.compare(cfg, base, seeds, turns, env) end
    local envs = study.list(cfg.env)
    -- several environments: a child run each, the algorithms under it
    for _, env in ipairs(envs) do
      if #envs > 1 then lt.run.child(env, function() compare(env) end) else compare(env) end
    end
  end }

-- experiments/agent/compare.lua: one environment's comparison of the agent study
-- (experiments/agent/agent.lua): the base policy's held-out success, then each algorithm
-- trained from it (a child run each, lt.rl.grpo on the rows of lt.envs.agent's episodes) and
-- scored on the same held-out seeds, compared per seed (up/down, sign test).
local study = require "lt.study"
local agent = require "lt.envs.agent"
local report = require "lt.report"
local M = {}

function M.compare(cfg, base, seeds, turns, env)
  local env_opts = env == "sokoban" and { size = cfg.size } or {}
  local function score(m)  -- the same episodes' draws for every model (stream "eval")
    return agent.success(m, env, env_opts, seeds, { temperature = 1,
      episodes = cfg.eval_episodes, seed = lt.run.seed("eval"), max_turns = turns })
  end
  local s0, per0 = score(base)
  lt.run.log("heldout_success_base", s0)
  print(("%s: base success %.3f on %d held-out seeds x %d sampled episodes"):format(
    env, s0, cfg.heldout, cfg.eval_episodes))
  local after = {}
  for _, algo in ipairs(study.list(cfg.algos)) do
    lt.run.child(algo, function()
      local m = base:clone():train_only(lt.layers.spec(base, cfg.train_only, "--train_only"))
      local o = { group = cfg.group, gamma = cfg.gamma,
                  omega = algo == "gigpo" and cfg.omega or 0, norm = cfg.norm,
                  scope = cfg.scope, lone = cfg.lone, penalty = cfg.penalty }
      lt.rl.grpo(m, { iterations = cfg.steps, lr = cfg.lr, mini_batches = cfg.mini_batches,
                      kl = 0, micro_batch = 64,
        produce = function(b)  -- training seeds after the held-out ones, new ones every batch
          local train = {}
          for i = 1, cfg.tasks do train[i] = cfg.heldout + (b - 1) * cfg.tasks + i end
          return agent.rows(agent.episodes(m, env, env_opts, train, {
            group = cfg.group, temperature = 1, seed = lt.run.seed("rl.rollout", b),
            max_turns = turns }), o)
        end })
      local s, per = score(m)
      lt.run.log("heldout_success", s)
      print(("%-6s success %.3f -> %.3f: %s"):format(algo, s0, s,
        select(4, report.paired("success", per0, per))))
      after[algo] = per
    end)
  end
  if after.gigpo and after.grpo then
    print("gigpo against grpo, per held-out seed: "
          .. select(4, report.paired("gigpo_vs_grpo", after.grpo, after.gigpo)))
  end
end

return M

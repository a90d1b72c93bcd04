-- lt/scan/task/agent.lua: the agent task of a layer scan (--task=agent; *Is One Layer Enough?*
-- Figure 5 in miniature): a policy acting in a text environment (lt.envs sokoban, grid --size; or
-- household, the ALFWorld stand-in), trained by lt.rl.grpo on the rows of its episodes
-- (lt.envs.agent) with GiGPO's advantages (--algo=gigpo: episode plus --omega x step advantages,
-- --gamma; --gigpo_norm, --gigpo_scope, --gigpo_lone and --penalty: verl-agent's computation by
-- default, runtime/rl/gigpo.h) or GRPO's on episodes (--algo=grpo: omega 0), as
-- experiments/agent/agent.lua does it: each batch --prompts training seeds (after the held-out
-- ones, new ones every batch) x --group_size episodes at --temperature. S = the success rate on the
-- held-out seeds 1..--bench_limit, --score_samples episodes each at --score_temperature (0: one
-- greedy episode), agent.lua's held-out success; logged as score/<env> and score. Every job of a
-- scan plays the same seeds with the same draws (the run's streams "eval", "rl.rollout": a scan's
-- workers share its seed).
--   require("lt.scan.task.agent").extend(cfg, t)  -- t: lt.scan.task.new's table
local agent = require "lt.envs.agent"
local M = {}

M.envs = { sokoban = true, household = true }  -- the environments lt.envs.agent's prompt shows whole (agent.lua's choices)

local function check_env(cfg)
  for _, k in ipairs{ "data", "bench" } do
    if not M.envs[cfg[k]] then
      error(("--%s=%s: the agent task trains and scores in one environment: sokoban or household"):format(k, cfg[k]), 0)
    end
  end
  if cfg.data ~= cfg.bench then error(("--data=%s --bench=%s: expected the same environment"):format(cfg.data, cfg.bench), 0) end
end

function M.extend(cfg, t)
  -- (--size: Sokoban's grid; household: trained on its train instances, scored on held-out ones)
  local function env_opts(split) return cfg.data == "sokoban" and { size = cfg.size } or { split = split } end

  function t.training_data() check_env(cfg) end  -- episodes are played as the jobs train

  local function train(m, o)
    local go = require("lt.scan.task").grpo_options(cfg)
    go.algo = "grpo"  -- the advantages come with the rows; the loss is GRPO's
    go.prompts, go.group_size, go.max_response, go.temperature = nil, nil, nil, nil
    local ro = { group = cfg.group_size, gamma = cfg.gamma, omega = cfg.algo == "gigpo" and cfg.omega or 0,
                 norm = cfg.gigpo_norm or "std", scope = cfg.gigpo_scope or "steps", lone = cfg.gigpo_lone or "pass",
                 penalty = cfg.penalty or "row" }
    for k, v in pairs{ iterations = cfg.steps, lr = o.lr or cfg.lr, warmup = cfg.warmup, micro_batch = cfg.micro_batch,
                       lr_mult = o.lr_mult, checkpoint_dir = o.checkpoint_dir, checkpoint_every = o.checkpoint_every,
                       resume = o.resume, stop_after = o.stop_after } do
      go[k] = v
    end
    go.produce = function(b)
      local seeds = {}
      for i = 1, cfg.prompts do seeds[i] = cfg.bench_limit + (b - 1) * cfg.prompts + i end
      local eps = agent.episodes(m, cfg.data, env_opts("train"), seeds, {
        group = cfg.group_size, temperature = cfg.temperature, max_response = cfg.max_response,
        seed = lt.run.seed("rl.rollout", b) })
      return agent.rows(eps, ro)
    end
    lt.run.param("agent_omega", ro.omega)
    return lt.rl.grpo(m, go)
  end

  function t.trainer()
    if not lt.rl then error(("--algo=%s needs lt.rl, which this build does not have"):format(cfg.algo), 0) end
    check_env(cfg)
    return train
  end

  -- S: the held-out success rate (see above); rep: a repetition's own draws
  function t.score(m, rep)
    check_env(cfg)
    local seeds = {}
    for s = 1, cfg.bench_limit do seeds[s] = s end
    local k = cfg.score_samples or 0
    local s, _, rows = agent.success(m, cfg.bench, env_opts("heldout"), seeds, {
      temperature = k > 0 and (cfg.score_temperature or 1.0) or 0, episodes = k > 0 and k or 1,
      max_response = cfg.max_response, seed = rep and lt.run.seed("eval.repeat", rep) or lt.run.seed("eval") })
    -- household: success per ALFWorld category (score/household/pick, ...) and overall
    if rows then lt.envs.log_success("score/" .. cfg.bench, rows) else lt.run.log("score/" .. cfg.bench, s) end
    lt.run.log("score", s)
    return s
  end

end

-- the agent task's settings in a scan key
function M.key_parts(cfg)
  return { "task=agent", "size=" .. tostring(cfg.size), "gamma=" .. tostring(cfg.gamma),
           "omega=" .. tostring(cfg.algo == "gigpo" and cfg.omega or 0),
           ("gigpo=%s,%s,%s;penalty=%s"):format(cfg.gigpo_norm or "std", cfg.gigpo_scope or "steps",
                                                cfg.gigpo_lone or "pass", cfg.penalty or "row") }
end

return M

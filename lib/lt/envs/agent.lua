-- lt/envs/agent.lua: multi-turn RL of a model acting in a text environment (lt.envs), with GiGPO
-- (runtime/rl/gigpo.h) or GRPO on episodes (omega = 0) as the advantage, trained by lt.rl.grpo
-- on the rows the episodes give (its `produce` option): one row per step, the prompt (the
-- environment's observation, shown by `prompt`) and the action tokens the model sampled; only
-- the action tokens enter the loss, the observations are in the prompt.
--
--   local agent = require "lt.envs.agent"
--   local eps = agent.episodes(m, env_name, env_opts, seeds, { group = 8, temperature = 1, seed = s })
--   local rows = agent.rows(eps, { gamma = 0.95, omega = 1 })   -- lt.rl.grpo's produce result
-- The episodes of a batch run in lockstep: one m:generate call per turn for every episode
-- still running, so the model decodes them as one batch.
local envs = require "lt.envs"
local M = {}

-- The prompt of one turn, short for a tiny model; history is not shown. Sokoban (the default,
-- env_name nil): the grid (the observation without its feedback line; the grid is the whole
-- state) and "Action:"; another environment (household): its whole observation (feedback,
-- task, admissible actions) and "Action:".
function M.prompt(obs, env_name)
  if env_name ~= nil and env_name ~= "sokoban" then return obs .. "\nAction:" end
  local grid = obs:match("^[^\n]*\n(.*)\nAdmissible actions:") or obs
  return grid .. "\nAction:"
end

-- the action text of a sampled continuation: Sokoban's first word; another environment's first
-- line (household commands are several words: "take mug 1 from countertop 1")
function M.action(text, env_name)
  if env_name ~= nil and env_name ~= "sokoban" then return (text:match("^%s*([^\n]*)"):gsub("%s+$", "")) end
  return text:match("^%s*(%S+)") or ""
end

-- new tokens per action at most (episodes' max_response, when the caller gives none): a Sokoban
-- move; else (the household, any environment of multi-word commands) *Is One Layer Enough?*
-- Table 10's Max Response Length, 512. Such an action ends at its first line (M.action reads no
-- further), so its generation stops there (M.stop) instead of running on to max_response.
M.max_response = { sokoban = 3, default = 512 }
M.stop = "\n"

-- episodes(m, env_name, env_opts, seeds, o): for each seed, o.group episodes of the model in
-- environment env_name (a group shares its seed: GiGPO's group of one task). o: group, temperature
-- (0: greedy), max_response (new tokens per action at most: the caller's max_response, else
-- M.max_response's), seed (the generate calls' base seed; turn t of the batch draws from seed +
-- t), max_turns (the env's max_steps). → { {seed, category (reset's
-- info.category), steps = {{prompt_ids, response_ids, action, reward, anchor, valid, penalty (the
-- invalid-action penalty within reward, info.penalty)}}, total_reward, solved, turns} ... } in seed
-- order, group members together.
function M.episodes(m, env_name, env_opts, seeds, o)
  lt.check_options(o, "lt.envs.agent.episodes", { "group", "temperature", "max_response", "seed", "max_turns" })
  local sokoban = env_name == nil or env_name == "sokoban"
  local max_response = o.max_response or (sokoban and M.max_response.sokoban or M.max_response.default)
  if type(max_response) ~= "number" or max_response < 1 or max_response ~= math.floor(max_response) then
    error(("lt.envs.agent.episodes: option max_response must be an integer >= 1, got %s"):format(tostring(max_response)), 2)
  end
  local eps, active = {}, {}
  for _, s in ipairs(seeds) do
    for _ = 1, o.group do
      local env = envs.get(env_name, env_opts)
      local obs, info = env:reset(s)
      local ep = { seed = s, category = info and info.category, steps = {}, total_reward = 0, solved = false,
                   env = env, obs = obs, anchor = info and info.anchor or obs }
      eps[#eps + 1] = ep
      active[#active + 1] = ep
    end
  end
  local turn = 0
  while #active > 0 do
    turn = turn + 1
    local prompts = {}
    for i, ep in ipairs(active) do prompts[i] = m.tokenizer:encode(M.prompt(ep.obs, env_name)) end
    local _, gens = m:generate(prompts, { max_new_tokens = max_response, temperature = o.temperature or 1,
                                         seed = (o.seed or 0) + turn,
                                         stop = not sokoban and M.stop or nil })
    local still = {}
    for i, ep in ipairs(active) do
      local ids = gens[i].ids
      local action = M.action(m.tokenizer:decode(ids), env_name)
      local obs, reward, done, info = ep.env:step(action)
      ep.steps[#ep.steps + 1] = { prompt_ids = prompts[i], response_ids = ids, action = action, reward = reward,
                                  anchor = ep.anchor, valid = info and info.valid, penalty = info and info.penalty or 0 }
      ep.total_reward = ep.total_reward + reward
      ep.obs, ep.anchor = obs, info and info.anchor or obs
      if info and info.solved then ep.solved = true end
      if done or (o.max_turns and #ep.steps >= o.max_turns) then ep.env = nil else still[#still + 1] = ep end
    end
    active = still
  end
  for _, ep in ipairs(eps) do ep.turns, ep.obs, ep.anchor = #ep.steps, nil, nil end
  return eps
end

-- rows(eps, o): lt.rl.grpo's produce result for episodes in groups of o.group (as episodes()
-- made them): each step a row with its GiGPO advantage (o.gamma, o.omega, o.norm, o.scope,
-- o.lone: lt.rl.gigpo's options, verl-agent's by default; omega 0: GRPO on episodes), plus the
-- batch's metrics (success rate, mean return, valid-action share, turns, share of steps in
-- anchor groups of two or more). o.penalty: "row" (verl-agent's): an invalid action's penalty
-- is taken out of the environment's reward and applied to that step's row alone; "reward": it
-- stays in the reward, so it enters the episode return and every earlier step's return.
function M.rows(eps, o)
  lt.check_options(o, "lt.envs.agent.rows", { "group", "gamma", "omega", "norm", "scope", "lone", "penalty" })
  local row_penalty = (o.penalty or "row") == "row"
  if not row_penalty and o.penalty ~= "reward" then
    error(("lt.envs.agent.rows: penalty '%s': expected row or reward"):format(tostring(o.penalty)), 2)
  end
  local out = { prompts = {}, responses = {}, advantages = {} }
  local solved, ret, valid, steps, grouped = 0, 0, 0, 0, 0
  for g = 1, #eps, o.group do
    local group = {}
    for k = g, g + o.group - 1 do
      local anchors, rewards, penalties = {}, {}, {}
      for t, s in ipairs(eps[k].steps) do
        anchors[t], rewards[t], penalties[t] = s.anchor, s.reward, 0
        if row_penalty then rewards[t], penalties[t] = s.reward + (s.penalty or 0), s.penalty or 0 end
      end
      group[#group + 1] = { anchors = anchors, rewards = rewards, penalties = penalties }
    end
    local a = lt.rl.gigpo(group, { gamma = o.gamma, omega = o.omega, norm = o.norm, scope = o.scope, lone = o.lone })
    for k = g, g + o.group - 1 do
      local ep, i = eps[k], k - g + 1
      for t, s in ipairs(ep.steps) do
        out.prompts[#out.prompts + 1] = s.prompt_ids
        out.responses[#out.responses + 1] = s.response_ids
        out.advantages[#out.advantages + 1] = a.advantage[i][t]
        if s.valid then valid = valid + 1 end
        if a.group_size[a.anchor_group[i][t] + 1] > 1 then grouped = grouped + 1 end
        steps = steps + 1
      end
      solved, ret = solved + (ep.solved and 1 or 0), ret + ep.total_reward
    end
  end
  out.metrics = { success = solved / #eps, episode_return = ret / #eps, valid_actions = valid / steps,
                  turns = steps / #eps, anchored_steps = grouped / steps }
  return out
end

-- The success rate of m on `seeds` (one episode each at `temperature`, o.episodes per seed),
-- per seed the number solved (for a paired comparison of two models on the same seeds), and the
-- rate per category (lt.envs.success_by_category's rows; the household's six and Overall; nil for
-- an environment without categories). o: episodes, temperature, seed, max_turns, max_response.
function M.success(m, env_name, env_opts, seeds, o)
  lt.check_options(o, "lt.envs.agent.success", { "episodes", "temperature", "seed", "max_turns", "max_response" })
  local eps = M.episodes(m, env_name, env_opts, seeds, { group = o.episodes or 1, temperature = o.temperature,
                                                        seed = o.seed, max_turns = o.max_turns,
                                                        max_response = o.max_response })
  local per, n = {}, 0
  for i, ep in ipairs(eps) do
    local s = math.floor((i - 1) / (o.episodes or 1)) + 1
    per[s] = (per[s] or 0) + (ep.solved and 1 or 0)
    n = n + (ep.solved and 1 or 0)
  end
  return n / #eps, per, eps[1] and eps[1].category and envs.success_by_category(eps) or nil
end

return M

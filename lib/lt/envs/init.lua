-- lt/envs: text environments for agentic RL: the interface, a checker that wraps any
-- environment, the built-in environments by name, and multi-turn rollouts.
--
-- An environment is an object with two methods:
--   env:reset(seed)   -> obs [, info]              seed: an integer in [0, 2^53] (the task instance)
--   env:step(action)  -> obs, reward, done [, info] action: the agent's text
-- obs is a string, reward a finite number, done a boolean, info nil or a table. info.anchor
-- (optional, a string) is the key of the environment state the observation shows: GiGPO groups
-- the steps taken in equal anchors (runtime/rl/gigpo.h); without it the observation text is the
-- key. Optional fields: env.instruction (a string put at the top of every prompt) and
-- env.max_steps. An action the environment cannot carry out returns its penalty and an
-- observation that says so; it never raises.
--
--   local env = lt.envs.get("sokoban", { size = 6 })   -- checked (lt.envs.check)
--   local ep = lt.envs.rollout(env, function(prompt) return "up" end, { seed = 3, max_turns = 20 })
--   -- ep.steps[t] = { obs, action, reward, done, anchor, prompt, info }
--   local rows = lt.envs.success_by_category(episodes)  -- household: Pick&Place ... Overall
local M = {}

-- name -> module (its new(opts) makes an environment) or a constructor function(opts)
M.registry = {
  sokoban = "lt.envs.sokoban",
  household = "lt.envs.household",
}

-- lt.envs.register(name, ctor): ctor(opts) -> an environment; get(name) then checks it
function M.register(name, ctor)
  if type(name) ~= "string" or name == "" then error("lt.envs.register: argument 1: expected a name", 2) end
  if type(ctor) ~= "function" then error("lt.envs.register: argument 2: expected a function(opts) -> env", 2) end
  M.registry[name] = ctor
end

local function describe(v)
  if type(v) == "string" then return ("the string %q"):format(#v > 40 and v:sub(1, 40) .. "..." or v) end
  if type(v) == "number" then return ("the number %s"):format(tostring(v)) end
  return type(v)
end

local CHECKED = {}  -- the key that marks a checker's wrapper

local function finite(x) return type(x) == "number" and x == x and x ~= math.huge and x ~= -math.huge end

-- lt.envs.check(env, name): env wrapped so that whatever breaks the interface is an error naming
-- the environment, the method and the field: a non-string observation, a non-number reward, a done
-- that is not a boolean, an info that is not a table, a non-string anchor; step before reset or
-- after done; a seed that is not an integer in [0, 2^53], an action that is not a string. An error
-- raised inside the environment is passed on with the environment's name before it.
function M.check(env, name)
  name = name or (type(env) == "table" and env.name) or "?"
  local function err(fmt, ...) error(("lt.envs: env '%s': " .. fmt):format(name, ...), 3) end
  if type(env) ~= "table" then err("expected a table with reset and step, got %s", type(env)) end
  for _, k in ipairs({ "reset", "step" }) do
    if type(env[k]) ~= "function" then err("has no function '%s' (an environment has reset(seed) and step(action))", k) end
  end
  if env.instruction ~= nil and type(env.instruction) ~= "string" then
    err("instruction is %s, expected a string or nil", describe(env.instruction))
  end
  local w = { name = name, inner = env, instruction = env.instruction, max_steps = env.max_steps, [CHECKED] = true }
  local state = "new"  -- new | running | done
  local function check_info(method, info)
    if info == nil then return end
    if type(info) ~= "table" then err("%s returned info %s, expected a table or nil", method, describe(info)) end
    if info.anchor ~= nil and type(info.anchor) ~= "string" then
      err("%s returned info.anchor %s, expected a string", method, describe(info.anchor))
    end
  end
  local function call(method, ...)
    local r = { pcall(env[method], env, ...) }
    if not r[1] then error(("lt.envs: env '%s': %s failed: %s"):format(name, method, tostring(r[2])), 3) end
    return unpack(r, 2, 5)
  end
  function w:reset(seed)
    if not finite(seed) or seed < 0 or seed ~= math.floor(seed) or seed > 2 ^ 53 then
      err("reset: the seed must be an integer in [0, 2^53], got %s", describe(seed))
    end
    local obs, info = call("reset", seed)
    if type(obs) ~= "string" then err("reset returned the observation %s, expected a string", describe(obs)) end
    check_info("reset", info)
    state = "running"
    return obs, info
  end
  function w:step(action)
    if state == "new" then err("step before reset") end
    if state == "done" then err("step after the episode ended (done was true); call reset") end
    if type(action) ~= "string" then err("step: the action is %s, expected a string", describe(action)) end
    local obs, reward, done, info = call("step", action)
    if type(obs) ~= "string" then err("step(%q) returned the observation %s, expected a string", action, describe(obs)) end
    if not finite(reward) then err("step(%q) returned the reward %s, expected a finite number", action, describe(reward)) end
    if type(done) ~= "boolean" then err("step(%q) returned done %s, expected a boolean", action, describe(done)) end
    check_info("step", info)
    if done then state = "done" end
    return obs, reward, done, info
  end
  return w
end

-- lt.envs.get(name, opts): a new checked environment
function M.get(name, opts)
  local ctor = M.registry[name]
  if ctor == nil then
    local known = {}
    for k in pairs(M.registry) do known[#known + 1] = k end
    table.sort(known)
    error(("lt.envs.get: no environment '%s' (known: %s)"):format(tostring(name), table.concat(known, ", ")), 2)
  end
  if type(ctor) == "string" then
    local mod = require(ctor)
    ctor = mod.new
  end
  return M.check(ctor(opts), name)
end

-- The default prompt: the environment's instruction, the last pairs (observation, action) of
-- the history window, then the current observation. pairs[k] = { obs =, action = , turn = }.
function M.prompt(instruction, pairs, obs, turn)
  local out = {}
  if instruction and instruction ~= "" then out[#out + 1] = instruction .. "\n" end
  if #pairs > 0 then
    out[#out + 1] = ("Your last %d step(s):\n"):format(#pairs)
    for _, p in ipairs(pairs) do
      out[#out + 1] = ("[Observation %d]\n%s\n[Action %d] %s\n"):format(p.turn, p.obs, p.turn, p.action)
    end
  end
  out[#out + 1] = ("[Observation %d]\n%s\n[Action %d]"):format(turn, obs, turn)
  return table.concat(out, "\n")
end

-- lt.envs.rollout(env, policy_fn, opts): one episode. env is reset to opts.seed; each turn the
-- prompt (opts.prompt or M.prompt) shows the last opts.history (observation, action) pairs and
-- the current observation; policy_fn(prompt, turn) returns the action text. Ends when the
-- environment says done or after opts.max_turns turns. Returns
--   { seed, steps = { { obs, action, reward, done, anchor, prompt, info }, ... },
--     total_reward, done, solved, category, final_obs, turns }
-- where steps[t].obs / anchor are those of the state the action was taken in, solved is whether
-- a step's info said solved, and category is reset's info.category (the household's task category).
function M.rollout(env, policy_fn, opts)
  lt.check_options(opts, "lt.envs.rollout", { "seed", "max_turns", "history", "prompt" })
  opts = opts or {}
  if type(env) ~= "table" or type(env.reset) ~= "function" or type(env.step) ~= "function" then
    error("lt.envs.rollout: argument 1: expected an environment (lt.envs.get or lt.envs.check)", 2)
  end
  if type(policy_fn) ~= "function" then error("lt.envs.rollout: argument 2: expected a function(prompt) -> action text", 2) end
  local seed = opts.seed
  if seed == nil then error("lt.envs.rollout: option seed is required (the task instance to reset to)", 2) end
  local max_turns = opts.max_turns or env.max_steps or 50
  local history = opts.history or 2
  for k, v in pairs({ max_turns = max_turns, history = history }) do
    if not finite(v) or v ~= math.floor(v) or v < (k == "max_turns" and 1 or 0) then
      error(("lt.envs.rollout: option %s must be an integer >= %d, got %s"):format(k, k == "max_turns" and 1 or 0, describe(v)), 2)
    end
  end
  local prompt_fn = opts.prompt or M.prompt
  if type(prompt_fn) ~= "function" then error("lt.envs.rollout: option prompt must be a function(instruction, pairs, obs, turn)", 2) end
  if not env[CHECKED] then env = M.check(env) end  -- a bare environment gets checked too

  local obs, info = env:reset(seed)
  local anchor = info and info.anchor or obs
  local ep = { seed = seed, steps = {}, total_reward = 0, done = false, solved = false,
               category = info and info.category }
  for turn = 1, max_turns do
    local pairs_ = {}
    for k = math.max(1, turn - history), turn - 1 do
      local s = ep.steps[k]
      pairs_[#pairs_ + 1] = { obs = s.obs, action = s.action, turn = k }
    end
    local prompt = prompt_fn(env.instruction, pairs_, obs, turn)
    if type(prompt) ~= "string" then error(("lt.envs.rollout: the prompt function returned %s, expected a string"):format(describe(prompt)), 2) end
    local ok, action = pcall(policy_fn, prompt, turn)
    if not ok then error(("lt.envs.rollout: turn %d: policy_fn failed: %s"):format(turn, tostring(action)), 2) end
    if type(action) ~= "string" then
      error(("lt.envs.rollout: turn %d: policy_fn returned %s, expected the action text"):format(turn, describe(action)), 2)
    end
    local obs2, reward, done, info2 = env:step(action)
    ep.steps[turn] = { obs = obs, action = action, reward = reward, done = done, anchor = anchor, prompt = prompt, info = info2 }
    ep.total_reward = ep.total_reward + reward
    if info2 and info2.solved then ep.solved = true end
    obs, anchor = obs2, info2 and info2.anchor or obs2
    if done then
      ep.done = true
      break
    end
  end
  ep.final_obs, ep.turns = obs, #ep.steps
  return ep
end

-- Deterministic random numbers from a seed, the same on every host (Park-Miller minimal
-- standard: every product stays below 2^53, so doubles compute it exactly). rng:int(n) is in
-- 1..n. The environments use it instead of math.random, whose state is global.
function M.rng(seed)
  local x = (math.floor(seed) % 2147483646) + 1
  for _ = 1, 3 do x = (x * 16807) % 2147483647 end  -- spread small neighbouring seeds apart
  local r = {}
  function r:next()
    x = (x * 16807) % 2147483647
    return x
  end
  function r:int(n) return (self:next() % n) + 1 end
  function r:pick(list) return list[self:int(#list)] end
  function r:shuffle(list)
    for i = #list, 2, -1 do
      local j = self:int(i)
      list[i], list[j] = list[j], list[i]
    end
    return list
  end
  return r
end

-- lt.envs.task_seeds(seed, n): n distinct task instance numbers in [0, 2^31) drawn from seed (a
-- stream of the run's seed, lt.run.seed(NAME, I)), so that the run's --seed picks the instances
function M.task_seeds(seed, n)
  local rng, out, seen = M.rng(seed), {}, {}
  while #out < n do
    local s = rng:next() - 1
    if not seen[s] then
      seen[s] = true
      out[#out + 1] = s
    end
  end
  return out
end

-- lt.envs.success_by_category(episodes[, categories]): the success rate of episodes ({category,
-- solved} each: lt.envs.rollout's or lt.envs.agent.episodes') per category, in the order of
-- `categories` (default: lt.envs.household.categories, ALFWorld's six in the column order of *Is
-- One Layer Enough?* Tables 4 and 5), then Overall over all episodes. -> rows { name, column,
-- episodes, solved, success (solved / episodes; nil for none) }, the last { name = "overall",
-- column = "Overall" }. An episode of another category is an error naming it.
function M.success_by_category(episodes, categories)
  categories = categories or require("lt.envs.household").categories
  local rows, by = {}, {}
  for i, c in ipairs(categories) do
    rows[i] = { name = c.name, column = c.column or c.name, episodes = 0, solved = 0 }
    by[c.name] = rows[i]
  end
  local all = { name = "overall", column = "Overall", episodes = 0, solved = 0 }
  for i, ep in ipairs(episodes) do
    local row = by[ep.category]
    if not row then
      error(("lt.envs.success_by_category: episode %d: category %s is none of the categories"):format(
        i, describe(ep.category)), 2)
    end
    for _, r in ipairs{ row, all } do
      r.episodes, r.solved = r.episodes + 1, r.solved + (ep.solved and 1 or 0)
    end
  end
  rows[#rows + 1] = all
  for _, r in ipairs(rows) do r.success = r.episodes > 0 and r.solved / r.episodes or nil end
  return rows
end

-- lt.envs.log_success(prefix, rows): success_by_category's rows as metrics of the current run:
-- PREFIX/NAME per category with episodes (PREFIX/pick, ...), PREFIX for Overall
function M.log_success(prefix, rows)
  for _, r in ipairs(rows) do
    if r.success then lt.run.log(r.name == "overall" and prefix or prefix .. "/" .. r.name, r.success) end
  end
end

-- The action text as the environments compare it: trimmed, lower case, inner runs of space
-- as one, a trailing full stop dropped.
function M.normalize_action(text)
  return (text:lower():gsub("%s+", " "):gsub("^ ", ""):gsub(" $", ""):gsub("%.$", ""))
end

-- The environments' option reader: opts checked against the keys of `defaults` (errors name
-- the key), each value of the default's type, numbers finite and within bounds[key] = {lo, hi}.
function M.options(fn, opts, defaults, bounds)
  local known = {}
  for k in pairs(defaults) do known[#known + 1] = k end
  lt.check_options(opts, fn, known)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts or {}) do
    if type(v) ~= type(defaults[k]) then
      error(("%s: option %s is %s, expected a %s"):format(fn, k, describe(v), type(defaults[k])), 3)
    end
    if type(v) == "number" then
      local b = bounds and bounds[k]
      if not finite(v) or (b and (v < b[1] or v > b[2])) or (b and b.int and v ~= math.floor(v)) then
        error(("%s: option %s = %s: expected %s%s"):format(fn, k, tostring(v), b and b.int and "an integer" or "a number",
                                                          b and (" in [%s, %s]"):format(b[1], b[2]) or ""), 3)
      end
    end
    o[k] = v
  end
  return o
end

lt.envs = M
return M

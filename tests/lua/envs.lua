-- tests/lua/envs.lua: lt.envs: the built-in environments are deterministic by seed and
-- solvable (solved through their text alone: a breadth-first search over the Sokoban grid read
-- from the observation, and a scripted household agent that reads the goal and the admissible
-- actions), invalid actions cost the penalty and crash nothing, the checker names the
-- environment and the field, and rollouts show the history window.
local T = require "lt.test"
local envs = lt.envs

local SEEDS = { 0, 1, 2, 3, 7, 42, 99, 1234, 65535, 2147483646 }

-- the text between the last "[Observation N]" line of a prompt and its "[Action N]"
local function current_obs(prompt)
  local last
  for body in prompt:gmatch("%[Observation %d+%]\n(.-)\n%[Action %d+%]") do last = body end
  return last
end

-------------------------------------------------------------------------------- sokoban

-- the grid of an observation as rows of characters (lines made only of # . P B T * +)
local function read_grid(obs)
  local rows = {}
  for line in obs:gmatch("[^\n]+") do
    if line:match("^[#%.PBT%*%+]+$") then rows[#rows + 1] = line end
  end
  return rows
end

-- breadth-first search over (player, box): the shortest list of moves that puts the box on
-- the target, or nil; written here from the rules, independent of the environment's code
local MOVES = { { "up", -1, 0 }, { "down", 1, 0 }, { "left", 0, -1 }, { "right", 0, 1 } }
local function solve_sokoban(rows)
  local wall, player, box, target = {}, nil, nil, nil
  for r, line in ipairs(rows) do
    wall[r] = {}
    for c = 1, #line do
      local ch = line:sub(c, c)
      wall[r][c] = ch == "#"
      if ch == "P" or ch == "+" then player = { r, c } end
      if ch == "B" or ch == "*" then box = { r, c } end
      if ch == "T" or ch == "+" or ch == "*" then target = { r, c } end
    end
  end
  assert(player and box and target, "grid without a player, box or target")
  local function key(p, b) return p[1] .. "," .. p[2] .. "," .. b[1] .. "," .. b[2] end
  local start = key(player, box)
  local prev, queue, head = { [start] = false }, { { player, box } }, 1
  while queue[head] do
    local p, b = queue[head][1], queue[head][2]
    head = head + 1
    if b[1] == target[1] and b[2] == target[2] then
      local path, k = {}, key(p, b)
      while prev[k] do
        table.insert(path, 1, prev[k][2])
        k = prev[k][1]
      end
      return path
    end
    for _, m in ipairs(MOVES) do
      local np, nb = { p[1] + m[2], p[2] + m[3] }, b
      local ok = not wall[np[1]][np[2]]
      if ok and np[1] == b[1] and np[2] == b[2] then
        nb = { b[1] + m[2], b[2] + m[3] }
        ok = not wall[nb[1]][nb[2]]
      end
      local k = key(np, nb)
      if ok and prev[k] == nil then
        prev[k] = { key(p, b), m[1] }
        queue[#queue + 1] = { np, nb }
      end
    end
  end
  return nil
end

T.case("sokoban: reset is deterministic by seed; seeds differ", function()
  local a, b = envs.get("sokoban"), envs.get("sokoban")
  local grids = {}
  for _, seed in ipairs(SEEDS) do
    local o1, i1 = a:reset(seed)
    local o2, i2 = b:reset(seed)
    T.eq(o1, o2, "seed " .. seed)
    T.eq(i1.anchor, i2.anchor, "anchor, seed " .. seed)
    grids[i1.anchor] = true
    T.ok(o1:find("Admissible actions: up, down, left, right", 1, true), "admissible actions listed")
    T.eq(#read_grid(o1), 6, "a 6x6 grid")
  end
  local n = 0
  for _ in pairs(grids) do n = n + 1 end
  T.ok(n >= 8, ("only %d different grids for %d seeds"):format(n, #SEEDS))
end)

T.case("sokoban: a breadth-first solution read from the text solves every seed, within max_steps", function()
  for _, size in ipairs({ 5, 6, 8 }) do
    local env = envs.get("sokoban", { size = size })
    for _, seed in ipairs(SEEDS) do
      local obs = env:reset(seed)
      local path = solve_sokoban(read_grid(obs))
      T.ok(path and #path >= 1, ("size %d seed %d: no solution"):format(size, seed))
      T.ok(#path <= env.max_steps, ("size %d seed %d: %d moves > max_steps %d"):format(size, seed, #path, env.max_steps))
      local total, done, reward, info = 0, false, nil, nil
      for k, a in ipairs(path) do
        T.ok(not done, "done before the last move")
        obs, reward, done, info = env:step(a)
        total = total + reward
        T.eq(info.valid, true, "move " .. k)
      end
      T.eq(done, true, ("size %d seed %d: done after the solution"):format(size, seed))
      T.eq(info.solved, true, "solved")
      T.eq(reward, 1.0, "the solving move's reward")
      -- at most 20 terms of 0.1 summed in doubles: off by < 20 * 2^-53 * 2, far below 1e-12
      T.near(total, 1.0 - 0.1 * (#path - 1), 1e-12, "rewards: 1 for solving, -0.1 per other move")
      T.ok(obs:find("solved!", 1, true), "the observation says solved")
    end
  end
end)

T.case("sokoban: invalid actions cost the penalty, change nothing, never crash; walls; max_steps", function()
  local env = envs.get("sokoban", { invalid_penalty = 0.7, max_steps = 12 })
  local obs0, info0 = env:reset(5)
  local junk = { "", "   ", "jump", "UP UP", "go up please", ("x"):rep(10000), "\0\1\2", "up\ndown", "ü", "<action>" }
  for k, a in ipairs(junk) do
    local obs, reward, done, info = env:step(a)
    T.eq(reward, -0.7, "penalty for " .. ("%q"):format(a:sub(1, 20)))
    T.eq(info.valid, false, "valid flag " .. k)
    T.eq(info.anchor, info0.anchor, "the state is unchanged " .. k)
    T.ok(obs:find("^Invalid action"), "the observation says it was invalid " .. k)
    T.ok(#obs < 400, "a long action is cut in the observation")
    T.eq(done, false, "not done after " .. k)
  end
  -- normalized forms are valid
  local _, r, _, info = env:step("  Up. ")
  T.eq(info.valid, true, "'  Up. ' is up")
  T.eq(r, -0.1, "step penalty")
  -- the 12th action ends the episode
  local done
  _, _, done = env:step("left")
  T.eq(done, true, "max_steps 12 reached (10 invalid + 2 moves)")
  T.raises(function() env:step("up") end, "env 'sokoban': step after the episode ended")
  -- bumping into the wall: rows are walls at the border; walk up until a wall stops the player
  local e2 = envs.get("sokoban", { walls = 0, max_steps = 50 })
  e2:reset(11)
  local last, stuck
  for _ = 1, 10 do
    local o, _, d, inf = e2:step("up")
    if d then break end
    if inf.anchor == last then stuck = o break end
    last = inf.anchor
  end
  T.ok(stuck and (stuck:find("into a wall", 1, true) or stuck:find("against a wall", 1, true)), "a blocked move says why")
end)

T.case("sokoban: options are checked", function()
  T.raises(function() envs.get("sokoban", { size = 4 }) end, "option size = 4: expected an integer in %[5, 10%]")
  T.raises(function() envs.get("sokoban", { size = 6.5 }) end, "option size")
  T.raises(function() envs.get("sokoban", { sise = 6 }) end, "unknown option 'sise'")
  T.raises(function() envs.get("sokoban", { step_penalty = "0.1" }) end, "option step_penalty is the string")
  T.raises(function() envs.get("sokoban", { step_penalty = 0 / 0 }) end, "option step_penalty")
  T.raises(function() envs.get("sokoban", 5) end, "options: expected a table")
end)

-------------------------------------------------------------------------------- household

-- A scripted agent that sees only the prompt text: it reads the goal and the admissible
-- actions, searches the receptacles in the listed order (opening closed ones) for an object of
-- the goal's type, treats it at the right device, and puts it in the target.
local DEVICE = { clean = "sinkbasin 1", hot = "microwave 1", cool = "fridge 1" }
local VERB = { clean = "clean", hot = "heat", cool = "cool" }
local function household_agent()
  local st = { visited = {}, holding = nil, treated = false }
  return function(prompt)
    local obs = current_obs(prompt)
    local what, target = obs:match("Your task is to: put a (.-) [io]n (%a+ %d+)%.")
    assert(what, "no goal in the observation:\n" .. obs)
    local adj, otype = what:match("^(%a+) (%a+)$")
    if not adj then adj, otype = "", what end
    local acts, has = {}, {}
    for a in obs:match("Admissible actions: ([^\n]*)"):gmatch("[^,]+") do
      a = a:gsub("^ ", "")
      acts[#acts + 1] = a
      has[a] = true
    end
    if not st.holding then
      for _, a in ipairs(acts) do
        local ob = a:match("^take (" .. otype .. " %d+) from ")
        if ob then
          st.holding = ob
          return a
        end
      end
      for _, a in ipairs(acts) do
        if a:match("^open ") then return a end  -- look inside what is closed here
      end
      for _, a in ipairs(acts) do
        local r = a:match("^go to (.+)$")
        if r and not st.visited[r] then
          st.visited[r] = true
          return a
        end
      end
      error("searched everywhere, no " .. otype)
    end
    if adj ~= "" and not st.treated then
      local a = ("%s %s with %s"):format(VERB[adj], st.holding, DEVICE[adj])
      if has[a] then
        st.treated = true
        return a
      end
      return "go to " .. DEVICE[adj]
    end
    local put = ("put %s in/on %s"):format(st.holding, target)
    if has[put] then return put end
    if has["open " .. target] then return "open " .. target end
    return "go to " .. target
  end
end

T.case("household: reset is deterministic; the goal and admissible actions are in the text", function()
  local a, b = envs.get("household"), envs.get("household")
  local goals, kinds = {}, {}
  for _, seed in ipairs(SEEDS) do
    local o1, i1 = a:reset(seed)
    local o2, i2 = b:reset(seed)
    T.eq(o1, o2, "seed " .. seed)
    T.eq(i1.anchor, i2.anchor, "anchor, seed " .. seed)
    T.ok(o1:find("^You are in the middle of a room%. Looking quickly around you, you see a "), "ALFWorld's opening")
    T.ok(o1:find("\nYour task is to: put a ", 1, true), "the task")
    T.ok(o1:find("\nAdmissible actions: go to ", 1, true), "admissible actions")
    goals[o1:match("Your task is to: ([^\n]+)")] = true
    kinds[i1.goal.kind] = true
  end
  local n = 0
  for _ in pairs(goals) do n = n + 1 end
  T.ok(n >= 6, ("only %d different goals for %d seeds"):format(n, #SEEDS))
  for _, k in ipairs({ "place", "clean", "heat", "cool" }) do
    local e = envs.get("household", { kinds = k })
    local o, i = e:reset(3)
    T.eq(i.goal.kind, k, "kinds = " .. k)
    if k ~= "place" then T.ok(o:find("put a " .. ({ clean = "clean", heat = "hot", cool = "cool" })[k] .. " "), k .. " goal text") end
  end
end)

T.case("household: the scripted agent solves every seed and every goal kind", function()
  for _, kind in ipairs({ "place", "clean", "heat", "cool" }) do
    local env = envs.get("household", { kinds = kind })
    for _, seed in ipairs(SEEDS) do
      local ep = envs.rollout(env, household_agent(), { seed = seed, history = 0 })
      local last = ep.steps[#ep.steps]
      T.eq(ep.done, true, ("%s seed %d: done (turns %d, last obs:\n%s)"):format(kind, seed, ep.turns, ep.final_obs))
      T.eq(last.info.solved, true, ("%s seed %d: solved"):format(kind, seed))
      T.eq(last.reward, 1.0, "reward 1 on completing the goal")
      T.eq(ep.total_reward, 1.0, "no other reward (every scripted action admissible)")
      T.ok(ep.final_obs:find("You have completed the task.", 1, true), "the observation says so")
      for k, s in ipairs(ep.steps) do T.eq(s.info.valid, true, ("%s seed %d step %d valid"):format(kind, seed, k)) end
    end
  end
end)

T.case("household: invalid commands cost the penalty and crash nothing; closed receptacles", function()
  local env = envs.get("household", { invalid_penalty = 0.25 })
  local _, i0 = env:reset(8)
  for k, a in ipairs({ "", "fly", "take unicorn 1 from cabinet 1", "put mug 1 in/on cabinet 1", "go to moon 1",
                        "go to", ("go to cabinet 1"):rep(500), "open", "\255\254", "look look" }) do
    local obs, reward, done, info = env:step(a)
    T.eq(reward, -0.25, "penalty " .. k)
    T.eq(info.valid, false, "valid flag " .. k)
    T.eq(info.anchor, i0.anchor, "unchanged state " .. k)
    T.ok(obs:find("^Nothing happens: "), "says it was invalid " .. k)
    T.eq(done, false, "not done " .. k)
  end
  -- a closed cabinet shows nothing until opened; taking from it is not admissible before
  local obs = env:step("go to cabinet 1")
  T.ok(obs:find("The cabinet 1 is closed.", 1, true), obs)
  T.ok(not obs:find("take [^,]* from cabinet 1"), "nothing to take from a closed cabinet")
  obs = env:step("Open Cabinet 1.")
  T.ok(obs:find("You open the cabinet 1. The cabinet 1 is open. In it, you see ", 1, true), obs)
  local o, r = env:step("inventory")
  T.eq(r, 0, "an admissible command earns 0")
  T.ok(o:find("^You are not carrying anything%."), o)
  T.raises(function() envs.get("household", { kinds = "place,fly" }) end, "unknown goal kind 'fly'")
  T.raises(function() envs.get("household", { objects = 99 }) end, "option objects = 99")
end)

-------------------------------------------------------------------------------- checker

-- a scriptable bad environment: returns what `ret` says
local function bad_env(ret_reset, ret_step)
  return { reset = function(self, seed) return unpack(ret_reset) end,
           step = function(self, a) return unpack(ret_step) end }
end

T.case("checker: errors name the environment and the field", function()
  local good_step = { "obs", 0, false, nil }
  local cases = {
    { { 42 }, good_step, "reset", "env 'bad': reset returned the observation the number 42, expected a string" },
    { { nil }, good_step, "reset", "env 'bad': reset returned the observation nil" },
    { { "o", "x" }, good_step, "reset", "env 'bad': reset returned info the string \"x\", expected a table" },
    { { "o", { anchor = 3 } }, good_step, "reset", "reset returned info.anchor the number 3, expected a string" },
    { { "o" }, { {}, 0, false }, "step", "env 'bad': step%(\"a\"%) returned the observation table, expected a string" },
    { { "o" }, { "o", "1", false }, "step", "returned the reward the string \"1\", expected a finite number" },
    { { "o" }, { "o", 0 / 0, false }, "step", "returned the reward the number nan, expected a finite number" },
    { { "o" }, { "o", math.huge, false }, "step", "returned the reward the number inf" },
    { { "o" }, { "o", 0, nil }, "step", "returned done nil, expected a boolean" },
    { { "o" }, { "o", 0, 1 }, "step", "returned done the number 1, expected a boolean" },
    { { "o" }, { "o", 0, true, 5 }, "step", "step returned info the number 5, expected a table or nil" },
  }
  for k, c in ipairs(cases) do
    local env = envs.check(bad_env(c[1], c[2]), "bad")
    if c[3] == "reset" then
      T.raises(function() env:reset(1) end, c[4], "case " .. k)
    else
      env:reset(1)
      T.raises(function() env:step("a") end, c[4], "case " .. k)
    end
  end
  local env = envs.check(bad_env({ "o" }, good_step), "bad")
  T.raises(function() env:step("a") end, "env 'bad': step before reset")
  for _, s in ipairs({ -1, 1.5, "3", 0 / 0, math.huge, 2 ^ 60 }) do
    T.raises(function() env:reset(s) end, "env 'bad': reset: the seed must be an integer in %[0, 2%^53%]", tostring(s))
  end
  T.raises(function() env:reset() end, "env 'bad': reset: the seed must be an integer in %[0, 2%^53%], got nil")
  env:reset(0)
  T.raises(function() env:step(7) end, "env 'bad': step: the action is the number 7, expected a string")
  T.raises(function() envs.check({ reset = function() end }, "half") end, "env 'half': has no function 'step'")
  T.raises(function() envs.check(5, "five") end, "env 'five': expected a table")
  -- an error inside the environment comes out with its name
  local boom = envs.check({ reset = function() return "o" end, step = function() error("kaput") end }, "boom")
  boom:reset(0)
  T.raises(function() boom:step("x") end, "env 'boom': step failed: .*kaput")
  T.raises(function() envs.get("minecraft") end, "no environment 'minecraft' %(known: household, sokoban%)")
  -- a registered environment goes through the checker too
  envs.register("liar", function() return bad_env({ "o" }, { "o", "lots", true }) end)
  local liar = envs.get("liar")
  liar:reset(0)
  T.raises(function() liar:step("a") end, "env 'liar': step%(\"a\"%) returned the reward the string \"lots\"")
  envs.registry.liar = nil
end)

-------------------------------------------------------------------------------- rollout

-- a counter world: the observation is "state N"; reward 1 at state 3 (done), else 0
local function counter_env()
  return { instruction = "Count to three.",
           reset = function(self) self.n = 0 return "state 0", { anchor = "s0" } end,
           step = function(self, a)
             if a == "inc" then self.n = self.n + 1 end
             return "state " .. self.n, self.n == 3 and 1 or 0, self.n == 3, { anchor = "s" .. self.n }
           end }
end

T.case("rollout: the history window, the steps' anchors and rewards, max_turns", function()
  local prompts = {}
  local script = { "noop", "inc", "inc", "inc" }
  local ep = envs.rollout(counter_env(), function(p, turn)
    prompts[turn] = p
    return script[turn]
  end, { seed = 5, history = 2, max_turns = 10 })
  T.eq(ep.turns, 4, "turns")
  T.eq(ep.done, true, "done")
  T.eq(ep.total_reward, 1, "total reward")
  T.eq(ep.seed, 5, "seed")
  local want_obs = { "state 0", "state 0", "state 1", "state 2" }
  for t, s in ipairs(ep.steps) do
    T.eq(s.obs, want_obs[t], "obs of step " .. t .. " (the state it was taken in)")
    T.eq(s.anchor, "s" .. want_obs[t]:match("%d"), "anchor of step " .. t)
    T.eq(s.action, script[t], "action " .. t)
    T.eq(s.prompt, prompts[t], "prompt kept " .. t)
    T.eq(s.done, t == 4, "done flag " .. t)
  end
  T.eq(ep.final_obs, "state 3", "final observation")
  -- the window: turn 1 has no history; turn 4 shows turns 2 and 3, not 1
  T.eq(prompts[1], "Count to three.\n\n[Observation 1]\nstate 0\n[Action 1]", "prompt 1")
  T.eq(prompts[4], "Count to three.\n\nYour last 2 step(s):\n\n[Observation 2]\nstate 0\n[Action 2] inc\n\n" ..
                   "[Observation 3]\nstate 1\n[Action 3] inc\n\n[Observation 4]\nstate 2\n[Action 4]", "prompt 4")
  T.ok(not prompts[4]:find("noop", 1, true), "turn 1 fell out of the window")
  -- history 0: only the current observation; a long history: everything so far
  local p0, pall = {}, {}
  envs.rollout(counter_env(), function(p, t) p0[t] = p return "inc" end, { seed = 0, history = 0 })
  T.eq(p0[3], "Count to three.\n\n[Observation 3]\nstate 2\n[Action 3]", "history 0")
  envs.rollout(counter_env(), function(p, t) pall[t] = p return "inc" end, { seed = 0, history = 100 })
  T.ok(pall[3]:find("Your last 2 step%(s%)") and pall[3]:find("%[Observation 1%]"), "history 100 shows all")
  -- max_turns stops a policy that never finishes
  local ep2 = envs.rollout(counter_env(), function() return "noop" end, { seed = 0, max_turns = 7 })
  T.eq(ep2.turns, 7, "max_turns")
  T.eq(ep2.done, false, "not done")
  -- without an anchor in info the observation text is the anchor
  local plain = { reset = function() return "a" end, step = function() return "b", 0, false end }
  local ep3 = envs.rollout(plain, function() return "x" end, { seed = 0, max_turns = 2 })
  T.eq(ep3.steps[1].anchor, "a", "anchor = obs")
  T.eq(ep3.steps[2].anchor, "b", "anchor = obs")
  -- a bare environment is checked by the rollout too
  local liar = { reset = function() return "a" end, step = function() return "b", "much", false end }
  T.raises(function() envs.rollout(liar, function() return "x" end, { seed = 0 }) end,
           "returned the reward the string \"much\", expected a finite number")
end)

T.case("rollout: bad arguments and policies are named", function()
  local env = envs.get("sokoban")
  local pol = function() return "up" end
  T.raises(function() envs.rollout(env, pol, {}) end, "option seed is required")
  T.raises(function() envs.rollout(env, pol, { seed = 1, turns = 3 }) end, "unknown option 'turns'")
  T.raises(function() envs.rollout(env, pol, { seed = 1, history = -1 }) end, "option history must be an integer >= 0")
  T.raises(function() envs.rollout(env, pol, { seed = 1, max_turns = 0 }) end, "option max_turns must be an integer >= 1")
  T.raises(function() envs.rollout(env, pol, { seed = 1, max_turns = 2.5 }) end, "option max_turns")
  T.raises(function() envs.rollout(env, "up", { seed = 1 }) end, "argument 2")
  T.raises(function() envs.rollout({}, pol, { seed = 1 }) end, "argument 1")
  T.raises(function() envs.rollout(env, function() return nil end, { seed = 1 }) end,
           "turn 1: policy_fn returned nil, expected the action text")
  T.raises(function() envs.rollout(env, function(_, t) return t < 3 and "up" or 3 end, { seed = 1 }) end,
           "turn 3: policy_fn returned the number 3")
  T.raises(function() envs.rollout(env, pol, { seed = -2 }) end, "the seed must be an integer in")
  T.raises(function() envs.rollout(env, function(_, t) if t == 2 then error("model died") end return "up" end, { seed = 1 }) end,
           "lt.envs.rollout: turn 2: policy_fn failed: .*model died")
end)

T.case("rollout + GiGPO anchors: episodes of one seed share their first anchor", function()
  -- two different scripted policies on the same seed start in the same state: the step
  -- groups GiGPO forms have at least the first step of each episode in common
  local env = envs.get("sokoban")
  local a = envs.rollout(env, function() return "up" end, { seed = 9, max_turns = 3 })
  local b = envs.rollout(env, function() return "left" end, { seed = 9, max_turns = 3 })
  T.eq(a.steps[1].anchor, b.steps[1].anchor, "same initial anchor")
  T.ok(a.steps[1].anchor:find("^#+\n"), "the anchor is the grid")
end)

T.finish()

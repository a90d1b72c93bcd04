-- tests/lua/envs.lua: lt.envs: the built-in environments are deterministic by seed and
-- solvable (solved through their text alone: a breadth-first search over the Sokoban grid read
-- from the observation, and a scripted household expert that reads the goal, the feedback and
-- the admissible actions, in each of ALFWorld's six categories), invalid actions cost the
-- penalty and crash nothing, the household's train and held-out instances are disjoint, success
-- per category (a random policy's printed), the checker names the environment and the field,
-- and rollouts show the history window.
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

-- ALFWorld's six task categories, read back from the goal text alone (ALFWorld's two templates
-- each; the treated ones before "put a X in Y", which would not match them anyway)
local GOALS = {
  { "pick2", "^put two (%a+) in (%a+)$" }, { "pick2", "^find two (%a+) and put them in (%a+)$" },
  { "look", "^look at (%a+) under the (%a+)$" }, { "look", "^examine the (%a+) with the (%a+)$" },
  { "heat", "^put a hot (%a+) in (%a+)$" }, { "heat", "^heat some (%a+) and put it in (%a+)$" },
  { "cool", "^put a cool (%a+) in (%a+)$" }, { "cool", "^cool some (%a+) and put it in (%a+)$" },
  { "clean", "^put a clean (%a+) in (%a+)$" }, { "clean", "^clean some (%a+) and put it in (%a+)$" },
  { "pick", "^put a (%a+) in (%a+)$" }, { "pick", "^put some (%a+) on (%a+)$" },
}
local function read_goal(obs)
  local text = obs:match("Your task is to: ([^\n]-)%.\n")
  assert(text, "no goal in the observation:\n" .. obs)
  for _, g in ipairs(GOALS) do
    local otype, where = text:match(g[2])
    if otype then return { category = g[1], type = otype, where = where, text = text } end
  end
  error("a goal in none of ALFWorld's templates: " .. text)
end

local function admissible(obs)
  local acts, has = {}, {}
  for a in obs:match("Admissible actions: ([^\n]*)"):gmatch("[^,]+") do
    a = a:gsub("^ ", "")
    acts[#acts + 1], has[a] = a, true
  end
  return acts, has
end

-- The scripted expert: it sees only the observation text. It keeps what it has seen where (the
-- feedback's "On the R, you see ..." and "In it, you see ..."), searches the receptacles in the
-- listed order (opening closed ones) for an object of the goal's type and for the lamp, treats the
-- object at the category's device, and puts it in the first receptacle of the target type (twice
-- for pick2), or switches the lamp on holding it. Every action it takes is admissible.
local DEVICE_KIND = { heat = { "microwave" }, cool = { "fridge" }, clean = { "sinkbasin", "bathtubbasin" } }
local VERB = { heat = "heat", cool = "cool", clean = "clean" }
local function household_expert()
  local st = { at = nil, seen = {}, visited = {}, placed = {}, hold = nil, treated = false, lamp_on = false }
  local goal
  return function(prompt)
    local obs = current_obs(prompt)
    goal = goal or read_goal(obs)
    local acts, has = admissible(obs)
    local feedback = obs:match("^[^\n]*")
    for r, list in feedback:gmatch("On the (%a+ %d+), you see ([^.]*)%.") do
      for ob in list:gmatch("a (%a+ %d+)") do st.seen[ob] = r end
    end
    for r, list in feedback:gmatch("The (%a+ %d+) is open%. In it, you see ([^.]*)%.") do
      for ob in list:gmatch("a (%a+ %d+)") do st.seen[ob] = r end
    end
    local function act(a)
      assert(has[a], ("the expert's action %q is not admissible:\n%s"):format(a, obs))
      local r = a:match("^go to (.+)$")
      if r then st.at, st.visited[r] = r, true end
      local ob = a:match("^take (.+) from ")
      if ob then st.hold, st.seen[ob] = ob, nil end
      if a:match("^put ") then st.placed[st.hold], st.hold, st.treated = true, nil, false end
      if a:match("^heat ") or a:match("^cool ") or a:match("^clean ") then st.treated = true end
      if a:match("^use ") then st.lamp_on = not st.lamp_on end
      return a
    end
    local function go(r)  -- to r, opening it once there
      if st.at ~= r then return act("go to " .. r) end
      if has["open " .. r] then return act("open " .. r) end
    end
    local function explore()  -- the next receptacle not yet looked in
      if st.at and has["open " .. st.at] then return act("open " .. st.at) end
      for _, a in ipairs(acts) do
        local r = a:match("^go to (.+)$")
        if r and not st.visited[r] then return act(a) end
      end
      error("searched everywhere for a " .. goal.type .. ":\n" .. obs)
    end
    local function fetch()  -- an object of the goal's type, not one already placed
      local names = {}
      for ob in pairs(st.seen) do names[#names + 1] = ob end
      table.sort(names)
      for _, ob in ipairs(names) do
        if ob:match("^" .. goal.type .. " %d+$") and not st.placed[ob] then
          local r = st.seen[ob]
          if st.at == r and has[("take %s from %s"):format(ob, r)] then return act(("take %s from %s"):format(ob, r)) end
          local a = go(r)
          if a then return a end
        end
      end
      return explore()
    end
    if goal.category == "look" then
      if not st.hold then return fetch() end
      local lamp
      for ob, r in pairs(st.seen) do if ob:match("^" .. goal.where .. " %d+$") then lamp = { ob, r } end end
      if not lamp then return explore() end
      if st.at ~= lamp[2] then return act("go to " .. lamp[2]) end
      return act("use " .. lamp[1])
    end
    if not st.hold then return fetch() end
    if DEVICE_KIND[goal.category] and not st.treated then
      for _, kind in ipairs(DEVICE_KIND[goal.category]) do
        local a = ("%s %s with %s 1"):format(VERB[goal.category], st.hold, kind)
        if has[a] then return act(a) end
        if has["go to " .. kind .. " 1"] then return act("go to " .. kind .. " 1") end
      end
      error("no device to " .. goal.category .. " with:\n" .. obs)
    end
    local target = goal.where .. " 1"
    local put = ("put %s in/on %s"):format(st.hold, target)
    if has[put] then return act(put) end
    return go(target)
  end
end

local CATEGORY_NAMES = { "pick", "pick2", "look", "heat", "cool", "clean" }

T.case("household: ALFWorld's six categories in the paper's column order; the goal text in ALFWorld's templates", function()
  local H = require "lt.envs.household"
  local want = { { "pick", "pick_and_place_simple", "Pick&Place" }, { "pick2", "pick_two_obj_and_place", "Pick2&Place" },
                 { "look", "look_at_obj_in_light", "LookInLight" }, { "heat", "pick_heat_then_place_in_recep", "Heat&Place" },
                 { "cool", "pick_cool_then_place_in_recep", "Cool&Place" },
                 { "clean", "pick_clean_then_place_in_recep", "Clean&Place" } }
  T.eq(#H.categories, 6)
  for i, w in ipairs(want) do
    T.eq(H.categories[i].name, w[1])
    T.eq(H.categories[i].alfworld, w[2])
    T.eq(H.categories[i].column, w[3])
  end
  for _, c in ipairs(CATEGORY_NAMES) do
    local env = envs.get("household", { categories = c })
    for seed = 0, 40 do
      local obs, info = env:reset(seed)
      local g = read_goal(obs)
      T.eq(g.category, c, ("seed %d: %q read as %s"):format(seed, g.text, g.category))
      T.eq(info.category, c, "info.category")
      T.eq(g.type, info.goal.type, "the object type in the text")
      T.eq(g.where, info.goal.target or info.goal.lamp, "the receptacle type (or lamp) in the text")
      T.ok(obs:find("^You are in the middle of a room%. Looking quickly around you, you see a "), "ALFWorld's opening")
      local acts = admissible(obs)
      T.eq(acts[#acts - 1], "inventory")
      T.eq(acts[#acts], "look")
      if c == "look" then T.ok(g.where == "desklamp" or g.where == "floorlamp", g.text) end
    end
  end
end)

T.case("household: a scripted expert solves every category on train and held-out instances within 50 turns", function()
  for _, split in ipairs{ "train", "heldout" } do
    for _, c in ipairs(CATEGORY_NAMES) do
      local env, most = envs.get("household", { categories = c, split = split }), 0
      for seed = 0, 59 do
        local ep = envs.rollout(env, household_expert(), { seed = seed, history = 0 })
        local last = ep.steps[#ep.steps]
        local what = ("%s %s seed %d"):format(split, c, seed)
        T.eq(ep.solved, true, ("%s: solved (turns %d, last obs:\n%s)"):format(what, ep.turns, ep.final_obs))
        T.eq(ep.category, c, what .. ": the episode's category")
        T.eq(last.reward, 1.0, what .. ": reward 1 on completing the goal")
        T.eq(ep.total_reward, 1.0, what .. ": no other reward (every action admissible)")
        T.ok(ep.final_obs:find("You have completed the task.", 1, true), what .. ": the observation says so")
        for k, s in ipairs(ep.steps) do T.eq(s.info.valid, true, ("%s step %d valid"):format(what, k)) end
        most = math.max(most, ep.turns)
      end
      print(("household %-7s %-5s: the expert solves 60 of 60, at most %d turns"):format(split, c, most))
    end
  end
end)

T.case("household: success per category of a random policy (printed) and of the expert", function()
  -- the random policy: an admissible action drawn uniformly each turn (its own seeded draws)
  local env = envs.get("household")
  local eps, expert = {}, {}
  for seed = 1, 240 do
    local rng = envs.rng(seed + 7919)
    eps[#eps + 1] = envs.rollout(env, function(prompt) return rng:pick((admissible(current_obs(prompt)))) end,
                                 { seed = seed, history = 0 })
    expert[#expert + 1] = envs.rollout(env, household_expert(), { seed = seed, history = 0 })
  end
  local rows, erows = envs.success_by_category(eps), envs.success_by_category(expert)
  local cols, vals = {}, {}
  for i, r in ipairs(rows) do
    cols[i], vals[i] = ("%11s"):format(r.column), ("%7.1f (%2d)"):format(100 * (r.success or 0), r.episodes)
    T.eq(r.name, i <= 6 and CATEGORY_NAMES[i] or "overall", "the column order")
    T.eq(erows[i].success, 1, "the expert solves every " .. r.column)
    T.ok(r.episodes >= 20 or i == 7, r.column .. ": every category is drawn (uniformly)")
  end
  print("random policy on 240 train instances, success % (episodes):")
  print(table.concat(cols, " "))
  print(table.concat(vals, " "))
  T.eq(rows[7].episodes, 240)
  T.ok(rows[7].success < 0.5, "a random policy fails most tasks")
  -- by hand: two categories, one episode unsolved
  local by = envs.success_by_category({ { category = "heat", solved = true }, { category = "heat", solved = false },
                                        { category = "pick", solved = true } })
  T.eq(by[1].success, 1)
  T.eq(by[2].success, nil, "no pick2 episode: no rate")
  T.eq(by[4].success, 0.5)
  T.eq(by[4].solved, 1)
  T.eq(by[7].success, 2 / 3, "overall")
  T.raises(function() envs.success_by_category({ { category = "fly", solved = true } }) end,
           "episode 1: category the string \"fly\" is none of the categories")
  -- logged: a metric per category with episodes, the prefix alone for Overall
  envs.log_success("test_success", by)
  lt.run.flush()
  local got = {}
  for _, r in ipairs(lt.run.query("SELECT name, value FROM metrics WHERE run_id = ? AND name LIKE 'test_success%'",
                                  lt.run.id())) do
    got[r.name] = r.value
  end
  T.eq(got["test_success/pick"], 1)
  T.eq(got["test_success/heat"], 0.5)
  T.near(got["test_success"], 2 / 3, 1e-15, "Overall")
  T.eq(got["test_success/pick2"], nil, "no episode, no metric")
end)

T.case("household: train and held-out instances are disjoint; each is the same for a seed", function()
  local seen = { train = {}, heldout = {} }
  local H = require "lt.envs.household"
  for _, split in ipairs{ "train", "heldout" } do
    local a, b = envs.get("household", { split = split }), envs.get("household", { split = split })
    for seed = 0, 299 do
      local o1, i1 = a:reset(seed)
      local o2, i2 = b:reset(seed)
      T.eq(o1, o2, split .. " seed " .. seed)
      T.eq(i1.instance, i2.instance, split .. " instance, seed " .. seed)
      T.eq(i1.anchor, i2.anchor, split .. " anchor, seed " .. seed)
      T.eq(i1.split, split)
      T.eq(H.split_of(i1.instance), split, "the instance's hash says its split")
      seen[split][i1.instance] = (seen[split][i1.instance] or 0) + 1
    end
  end
  local n = { train = 0, heldout = 0 }
  for split, keys in pairs(seen) do for _ in pairs(keys) do n[split] = n[split] + 1 end end
  for k in pairs(seen.heldout) do T.ok(not seen.train[k], "a held-out instance among the training ones: " .. k) end
  T.ok(n.train >= 295 and n.heldout >= 295, ("distinct instances: %d train, %d held out of 300"):format(n.train, n.heldout))
  -- a replayed episode is the same: the same actions give the same observations
  local env = envs.get("household", { split = "heldout" })
  local e1 = envs.rollout(env, household_expert(), { seed = 11, history = 0 })
  local e2 = envs.rollout(env, household_expert(), { seed = 11, history = 0 })
  T.eq(e1.turns, e2.turns)
  for t = 1, e1.turns do T.eq(e1.steps[t].obs, e2.steps[t].obs) end
  -- task_seeds: distinct, the same for a seed, another seed another draw
  local s1, s2, s3 = envs.task_seeds(42, 50), envs.task_seeds(42, 50), envs.task_seeds(43, 50)
  local uniq = {}
  for i = 1, 50 do
    T.eq(s1[i], s2[i])
    T.ok(s1[i] >= 0 and s1[i] < 2 ^ 31 and not uniq[s1[i]], "distinct instance numbers")
    uniq[s1[i]] = true
  end
  T.ok(s1[1] ~= s3[1] or s1[2] ~= s3[2], "another seed, other instances")
end)

T.case("household: closed receptacles, the lamp, one object in hand, invalid commands", function()
  local env = envs.get("household", { invalid_penalty = 0.25, categories = "look" })
  local obs0, i0 = env:reset(8)
  for k, a in ipairs({ "", "fly", "take unicorn 1 from cabinet 1", "put mug 1 in/on cabinet 1", "go to moon 1",
                        "go to", ("go to cabinet 1"):rep(500), "open", "\255\254", "look look", "use desklamp 1" }) do
    local obs, reward, done, info = env:step(a)
    T.eq(reward, -0.25, "penalty " .. k)
    T.eq(info.valid, false, "valid flag " .. k)
    T.eq(info.anchor, i0.anchor, "unchanged state " .. k)
    T.ok(obs:find("^Nothing happens%.\n"), "ALFWorld's feedback " .. k)
    T.eq(done, false, "not done " .. k)
  end
  -- walk the receptacles until the lamp shows; note the first closed one on the way
  local lamp, closed
  for _, a in ipairs((admissible(obs0))) do
    local r = a:match("^go to (.+)$")
    if r then
      local obs = env:step(a)
      if obs:find("^You arrive at " .. r .. "%. The " .. r .. " is closed%.") then closed = closed or r end
      lamp = obs:match("^You arrive at [^\n]-a (%a+lamp %d+)")
      if lamp then break end
    end
  end
  T.ok(lamp, "a lamp stands somewhere in a look task's room")
  local obs = env:step("use " .. lamp)
  T.ok(obs:find("^You turn on the " .. lamp .. "%."), obs)
  T.ok(not obs:find("take " .. lamp, 1, true), "the lamp is not taken")
  obs = env:step("use " .. lamp)
  T.ok(obs:find("^You turn off the " .. lamp .. "%."), obs)
  obs = env:step("inventory")
  T.ok(obs:find("^You are not carrying anything%."), obs)
  if closed then
    obs = env:step("go to " .. closed)
    T.ok(not obs:find("take [^,]* from " .. closed), "nothing to take from a closed receptacle")
    obs = env:step("Open " .. closed:gsub("^%l", string.upper) .. ".")
    T.ok(obs:find("You open the " .. closed .. ". The " .. closed .. " is open. In it, you see ", 1, true), obs)
    T.ok(obs:find("close " .. closed, 1, true), "close is admissible once open")
    obs = env:step("close " .. closed)
    T.ok(obs:find("^You close the " .. closed .. "%."), obs)
  end
  -- holding one object, no take is admissible anywhere
  local e2 = envs.get("household", { categories = "pick" })
  local o = e2:reset(5)
  local took
  for _, a in ipairs((admissible(o))) do
    if a:match("^go to ") then
      local ob = e2:step(a)
      local t = ob:match("Admissible actions: .-(take [^,]+)")
      if t then
        ob = e2:step(t)
        T.ok(not ob:find("take ", 1, true), "one object in hand: no take admissible")
        T.ok(ob:find("put ", 1, true), "put is")
        took = true
        break
      end
    end
  end
  T.ok(took, "some object to take")
  T.raises(function() envs.get("household", { categories = "pick,fly" }) end, "unknown category 'fly'")
  T.raises(function() envs.get("household", { objects = 99 }) end, "option objects = 99")
  T.raises(function() envs.get("household", { split = "test" }) end, "option split = 'test': expected train or heldout")
  T.raises(function() envs.get("household", { kinds = "place" }) end, "unknown option 'kinds'")
end)

T.case("household: the episode ends at 50 turns, ALFWorld's cap", function()
  local env = envs.get("household")
  T.eq(env.max_steps, 50)
  local ep = envs.rollout(env, function() return "look" end, { seed = 4, history = 0, max_turns = 1000 })
  T.eq(ep.turns, 50)
  T.eq(ep.done, true)
  T.eq(ep.solved, false)
  T.ok(ep.final_obs:find("Out of steps (50).", 1, true), ep.final_obs)
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

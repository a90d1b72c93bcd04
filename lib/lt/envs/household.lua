-- lt/envs/household: a small household text world in ALFWorld's style. From the seed: one room
-- with receptacles (cabinets, drawers, countertops, a fridge, a microwave, a sink basin...),
-- objects on and in them, and a goal of one of four kinds:
--   put a mug in cabinet 1 | put a clean mug in ... | put a hot mug in ... | put a cool mug in ...
-- Cleaning is done at the sink basin, heating with the microwave, cooling with the fridge,
-- each while holding the object ("clean mug 1 with sinkbasin 1"). Cabinets, drawers, the fridge
-- and the microwave are closed until opened. Commands are ALFWorld's: go to R, open R, close R,
-- take O from R, put O in/on R, clean/heat/cool O with R, look, inventory.
--
-- Observation: the feedback, the task, and "Admissible actions: a, b, ..." (every command that does
-- something here; ALFWorld lists them the same way). Rewards: solve_reward (1) when the goal holds
-- (done); 0 for any other admissible command; -invalid_penalty (0.1) for a command that is not
-- admissible (nothing changes, the feedback says "Nothing happens" and why). Ends after max_steps
-- (50, ALFWorld's) actions, invalid ones included. info = { anchor = a key of the whole state
-- (place, hand, open receptacles, objects with their place and treatment), solved, valid, goal = {
-- kind, type, target }, penalty = invalid_penalty on an invalid command, else 0 }. Options:
-- max_steps, invalid_penalty, step_penalty (0), solve_reward, objects (4..12, default 7), kinds
-- (the goal kinds drawn from, default "place,clean,heat,cool").
local envs = require "lt.envs"
local M = {}

M.defaults = { max_steps = 50, invalid_penalty = 0.1, step_penalty = 0.0, solve_reward = 1.0, objects = 7,
               kinds = "place,clean,heat,cool" }
M.bounds = { max_steps = { 1, 10000, int = true }, invalid_penalty = { 0, 100 }, step_penalty = { 0, 100 },
             solve_reward = { -100, 100 }, objects = { 4, 12, int = true } }

-- receptacle kinds: openable, the treatment done there, whether goals put things there
local KINDS = {
  cabinet = { open = true, target = true }, drawer = { open = true, target = true },
  countertop = { target = true }, diningtable = { target = true }, shelf = { target = true },
  fridge = { open = true, does = "cool" }, microwave = { open = true, does = "heat" },
  sinkbasin = { does = "clean" }, stoveburner = {}, garbagecan = {},
}
-- object types and the treatments they take
local TYPES = {
  mug = { clean = true, heat = true, cool = true }, cup = { clean = true, heat = true, cool = true },
  bowl = { clean = true, heat = true, cool = true }, plate = { clean = true, heat = true, cool = true },
  apple = { clean = true, heat = true, cool = true }, potato = { clean = true, heat = true, cool = true },
  tomato = { clean = true, heat = true, cool = true }, egg = { heat = true, cool = true },
  bread = { heat = true, cool = true }, lettuce = { clean = true, cool = true },
  knife = { clean = true }, spoon = { clean = true }, book = {}, pen = {},
}
local TREAT = { clean = "clean", heat = "hot", cool = "cool" }  -- kind -> the adjective of the goal
local PAST = { clean = "clean", heat = "heat", cool = "cool" }

local Env = {}
Env.__index = Env

function M.new(opts)
  local o = envs.options("lt.envs.household", opts, M.defaults, M.bounds)
  o.kind_list = {}
  for k in o.kinds:gmatch("[^,%s]+") do
    if k ~= "place" and not TREAT[k] then
      error(("lt.envs.household: option kinds: unknown goal kind '%s' (known: place, clean, heat, cool)"):format(k), 2)
    end
    o.kind_list[#o.kind_list + 1] = k
  end
  if #o.kind_list == 0 then error("lt.envs.household: option kinds names no goal kind", 2) end
  local e = setmetatable({ o = o, max_steps = o.max_steps }, Env)
  e.instruction = "You are an expert agent in a household. Reach the goal with the commands of the " ..
                  "admissible actions. Answer with exactly one admissible action."
  return e
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

local function generate(o, seed)
  local rng = envs.rng(seed)
  for _ = 1, 100 do
    -- receptacles: the three devices, one countertop and one cabinet always, the rest drawn
    local counts = { sinkbasin = 1, microwave = 1, fridge = 1, countertop = rng:int(2), cabinet = rng:int(3),
                     drawer = rng:int(2), shelf = rng:int(2) - 1, diningtable = rng:int(2) - 1,
                     stoveburner = rng:int(2), garbagecan = rng:int(2) - 1 }
    local recs, names = {}, {}
    for _, kind in ipairs(sorted_keys(counts)) do
      for i = 1, counts[kind] do
        local name = kind .. " " .. i
        recs[name] = { name = name, kind = kind, openable = KINDS[kind].open or false, open = false, does = KINDS[kind].does }
        names[#names + 1] = name
      end
    end
    table.sort(names)
    -- objects, numbered per type, each in a receptacle (never the garbage can)
    local type_names = sorted_keys(TYPES)
    local holders = {}
    for _, n in ipairs(names) do if recs[n].kind ~= "garbagecan" then holders[#holders + 1] = n end end
    local objs, per_type = {}, {}
    for _ = 1, o.objects do
      local t = rng:pick(type_names)
      per_type[t] = (per_type[t] or 0) + 1
      local name = t .. " " .. per_type[t]
      objs[name] = { name = name, type = t, loc = rng:pick(holders) }
    end
    -- the goal: a kind, a type present that takes its treatment, a target without that type
    local kind = rng:pick(o.kind_list)
    local types = {}
    for _, t in ipairs(sorted_keys(per_type)) do
      if kind == "place" or TYPES[t][kind] then types[#types + 1] = t end
    end
    if #types > 0 then
      local t = rng:pick(types)
      local targets = {}
      for _, n in ipairs(names) do
        if KINDS[recs[n].kind].target then
          local has = false
          for _, ob in pairs(objs) do if ob.type == t and ob.loc == n then has = true end end
          if not has then targets[#targets + 1] = n end
        end
      end
      if #targets > 0 then
        return { recs = recs, names = names, objs = objs, loc = nil, hold = nil,
                 goal = { kind = kind, type = t, target = rng:pick(targets) } }
      end
    end
  end
  error(("lt.envs.household: seed %d: no instance with a reachable goal after 100 attempts"):format(seed))
end

local function a_list(items)
  if #items == 0 then return "nothing" end
  local out = {}
  for i, x in ipairs(items) do out[i] = "a " .. x end
  if #out == 1 then return out[1] end
  return table.concat(out, ", ", 1, #out - 1) .. ", and " .. out[#out]
end

function Env:contents(rname)
  local list = {}
  for _, ob in pairs(self.s.objs) do if ob.loc == rname then list[#list + 1] = ob.name end end
  table.sort(list)
  return list
end

function Env:goal_text()
  local g = self.s.goal
  local prep = self.s.recs[g.target].openable and "in" or "on"
  local adj = TREAT[g.kind] and (TREAT[g.kind] .. " ") or ""
  return ("put a %s%s %s %s"):format(adj, g.type, prep, g.target)
end

local function accessible(r) return not r.openable or r.open end

-- every command that does something now, in a fixed order
function Env:admissible()
  local s, acts = self.s, {}
  for _, n in ipairs(s.names) do if n ~= s.loc then acts[#acts + 1] = "go to " .. n end end
  if s.loc then
    local r = s.recs[s.loc]
    if r.openable then acts[#acts + 1] = (r.open and "close " or "open ") .. r.name end
    if accessible(r) then
      if s.hold then
        acts[#acts + 1] = ("put %s in/on %s"):format(s.hold, r.name)
      else
        for _, ob in ipairs(self:contents(r.name)) do acts[#acts + 1] = ("take %s from %s"):format(ob, r.name) end
      end
    end
    if s.hold and r.does and TYPES[s.objs[s.hold].type][r.does] then
      acts[#acts + 1] = ("%s %s with %s"):format(r.does, s.hold, r.name)
    end
  end
  acts[#acts + 1] = "look"
  acts[#acts + 1] = "inventory"
  return acts
end

function Env:anchor()
  local s, parts = self.s, {}
  parts[1] = "at=" .. (s.loc or "-") .. ";hold=" .. (s.hold or "-") .. ";open="
  local open = {}
  for _, n in ipairs(s.names) do if s.recs[n].open then open[#open + 1] = n end end
  parts[2] = table.concat(open, ",")
  for _, n in ipairs(sorted_keys(s.objs)) do
    local ob = s.objs[n]
    parts[#parts + 1] = (";%s@%s%s%s%s"):format(n, ob.loc, ob.clean and "+clean" or "", ob.hot and "+hot" or "",
                                               ob.cool and "+cool" or "")
  end
  return table.concat(parts)
end

function Env:observe(feedback)
  local acts = self:admissible()
  self.acts = {}
  for _, a in ipairs(acts) do self.acts[a] = true end
  return ("%s\nYour task is to: %s.\nAdmissible actions: %s"):format(feedback, self:goal_text(), table.concat(acts, ", ")),
         self:anchor()
end

function Env:describe_at(r)
  if r.openable and not r.open then return ("The %s is closed."):format(r.name) end
  if r.openable then return ("The %s is open. In it, you see %s."):format(r.name, a_list(self:contents(r.name))) end
  return ("On the %s, you see %s."):format(r.name, a_list(self:contents(r.name)))
end

function Env:reset(seed)
  self.s = generate(self.o, seed)
  self.steps = 0
  local obs, anchor = self:observe(("You are in the middle of a room. Looking quickly around you, you see %s.")
                                   :format(a_list(self.s.names)))
  return obs, { anchor = anchor, goal = self.s.goal }
end

function Env:solved()
  local g = self.s.goal
  for _, ob in pairs(self.s.objs) do
    if ob.type == g.type and ob.loc == g.target and (g.kind == "place" or ob[TREAT[g.kind]]) then return true end
  end
  return false
end

-- carries out an admissible command; returns the feedback
function Env:act(a)
  local s = self.s
  local r = s.loc and s.recs[s.loc]
  local target = a:match("^go to (.+)$")
  if target then
    s.loc = target
    return ("You arrive at %s. %s"):format(target, self:describe_at(s.recs[target]))
  end
  if a:match("^open ") then
    r.open = true
    return ("You open the %s. %s"):format(r.name, self:describe_at(r))
  end
  if a:match("^close ") then
    r.open = false
    return ("You close the %s."):format(r.name)
  end
  local ob = a:match("^take (.+) from ")
  if ob then
    s.objs[ob].loc, s.hold = "hand", ob
    return ("You pick up the %s from the %s."):format(ob, r.name)
  end
  ob = a:match("^put (.+) in/on ")
  if ob then
    s.objs[ob].loc, s.hold = r.name, nil
    return ("You put the %s in/on the %s."):format(ob, r.name)
  end
  local verb
  verb, ob = a:match("^(%a+) (.+) with ")
  if verb and TREAT[verb] then
    s.objs[ob][TREAT[verb]] = true
    return ("You %s the %s using the %s."):format(PAST[verb], ob, r.name)
  end
  if a == "look" then
    if not r then return ("You are in the middle of a room. Looking quickly around you, you see %s."):format(a_list(s.names)) end
    return ("You are at %s. %s"):format(r.name, self:describe_at(r))
  end
  if a == "inventory" then
    if not s.hold then return "You are not carrying anything." end
    local o = s.objs[s.hold]
    local st = {}
    for _, k in ipairs({ "clean", "hot", "cool" }) do if o[k] then st[#st + 1] = k end end
    return ("You are carrying: a %s%s."):format(s.hold, #st > 0 and (" (" .. table.concat(st, ", ") .. ")") or "")
  end
  error("household: admissible command without an effect: " .. a)  -- a bug here, never the agent's
end

function Env:step(action)
  if self.s == nil then error("step before reset") end
  self.steps = self.steps + 1
  local a = envs.normalize_action(action)
  local reward, feedback, valid = 0 - self.o.step_penalty, nil, self.acts[a] == true
  if valid then
    feedback = self:act(a)
  else
    reward = -self.o.invalid_penalty
    feedback = ("Nothing happens: %q is not an admissible action here."):format(action:sub(1, 80))
  end
  local solved = valid and self:solved()
  if solved then
    reward = self.o.solve_reward
    feedback = feedback .. " You have completed the task."
  end
  local done = solved or self.steps >= self.o.max_steps
  if done and not solved then feedback = feedback .. (" Out of steps (%d)."):format(self.o.max_steps) end
  local obs, anchor = self:observe(feedback)
  return obs, reward, done, { anchor = anchor, solved = solved, valid = valid, goal = self.s.goal,
                              penalty = valid and 0 or self.o.invalid_penalty }  -- (the penalty within reward)
end

return M

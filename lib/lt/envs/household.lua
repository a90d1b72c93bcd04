-- lt/envs/household: ALFWorld's household tasks (Shridhar et al. 2021) in a text world of the
-- project's own: ALFWorld's six task categories (M.categories), its goal wording, commands,
-- feedback and admissible-action list, generated from the seed instead of read from ALFWorld's
-- PDDL game files (docs/household.md says what differs and how to plug those in).
--
-- reset(seed): task instance number `seed` of the split (option split, "train" or "heldout"). An
-- instance is one room (a kitchen, bathroom, bedroom or living room with ALFWorld's receptacles),
-- objects on and in its receptacles, and a goal of one category:
--   pick   put a mug in shelf. | put some mug on shelf.
--   pick2  put two cd in drawer. | find two cd and put them in drawer.
--   look   look at book under the desklamp. | examine the book with the desklamp.
--   heat   put a hot apple in countertop. | heat some apple and put it in countertop.
--   cool   put a cool apple in countertop. | cool some apple and put it in countertop.
--   clean  put a clean apple in countertop. | clean some apple and put it in countertop.
-- The goal names object and receptacle types, as ALFWorld's do: any mug in any shelf counts; pick2
-- wants two in one receptacle; look wants one held where a lamp of the named type is on. The split
-- is by instance: an instance is held out when a hash of its whole content (room, places, goal)
-- falls in one bucket of M.heldout_every, so no held-out instance is ever a training one; the
-- generator draws instances from the seed until one of the split comes.
--
-- Commands (ALFWorld's): go to R, open R, close R, take O from R, put O in/on R, heat O with
-- microwave, cool O with fridge, clean O with sinkbasin/bathtubbasin (holding O, at the device),
-- use LAMP (switches it on or off, at the lamp's receptacle), examine R (where you are), look,
-- inventory. One object is held at a time; cabinets, drawers, the fridge, the microwave and the
-- safe are closed until opened, and nothing in them can be taken or put before.
-- Observation: the feedback, "Your task is to: GOAL." and "Admissible actions: a, b, ..." (every
-- command that does something now). Rewards: solve_reward (1) when the goal holds (done); 0 (minus
-- step_penalty, default 0) for another admissible command; -invalid_penalty (0.1) for a command
-- that is not admissible (nothing changes; the feedback says "Nothing happens"). Ends after
-- max_steps (50, ALFWorld's) actions, invalid ones included. info = { anchor (the whole state),
-- solved, valid, penalty (invalid_penalty on an invalid command, else 0), category, goal =
-- { category, type, target (a receptacle type) or lamp }, split }; reset's info also has
-- instance, the text that fixes the instance (what the split is decided on). Options: max_steps,
-- invalid_penalty, step_penalty, solve_reward, objects (besides the goal's, 2..12, default 6),
-- categories (drawn from, uniformly; default all six), split.
local envs = require "lt.envs"
local M = {}

-- ALFWorld's task types in the column order of *Is One Layer Enough?* Tables 4 and 5
M.categories = {
  { name = "pick", alfworld = "pick_and_place_simple", column = "Pick&Place" },
  { name = "pick2", alfworld = "pick_two_obj_and_place", column = "Pick2&Place" },
  { name = "look", alfworld = "look_at_obj_in_light", column = "LookInLight" },
  { name = "heat", alfworld = "pick_heat_then_place_in_recep", column = "Heat&Place" },
  { name = "cool", alfworld = "pick_cool_then_place_in_recep", column = "Cool&Place" },
  { name = "clean", alfworld = "pick_clean_then_place_in_recep", column = "Clean&Place" },
}
local CATEGORY = {}
for _, c in ipairs(M.categories) do CATEGORY[c.name] = c end

M.defaults = { max_steps = 50, invalid_penalty = 0.1, step_penalty = 0.0, solve_reward = 1.0, objects = 6,
               categories = "pick,pick2,look,heat,cool,clean", split = "train" }
M.bounds = { max_steps = { 1, 10000, int = true }, invalid_penalty = { 0, 100 }, step_penalty = { 0, 100 },
             solve_reward = { -100, 100 }, objects = { 2, 12, int = true } }
M.splits = { train = true, heldout = true }
M.heldout_every = 8  -- one instance in 8 (by the hash of its content) is held out

-- the two goal templates of each category (ALFWorld's wording); %s: object type, receptacle type
local TEMPLATES = {
  pick = { "put a %s in %s", "put some %s on %s" },
  pick2 = { "put two %s in %s", "find two %s and put them in %s" },
  look = { "look at %s under the %s", "examine the %s with the %s" },
  heat = { "put a hot %s in %s", "heat some %s and put it in %s" },
  cool = { "put a cool %s in %s", "cool some %s and put it in %s" },
  clean = { "put a clean %s in %s", "clean some %s and put it in %s" },
}
local STATE = { heat = "hot", cool = "cool", clean = "clean" }  -- category -> the state it gives
local DEVICE = { microwave = "heat", fridge = "cool", sinkbasin = "clean", bathtubbasin = "clean" }
local OPENABLE = { cabinet = true, drawer = true, fridge = true, microwave = true, safe = true }
local NO_OBJECTS = { toaster = true, coffeemachine = true }  -- nothing starts in these

-- which object types take which category (ALFWorld's, for the types here)
local TAKES = {
  heat = { apple = 1, bread = 1, cup = 1, egg = 1, mug = 1, plate = 1, potato = 1, tomato = 1 },
  cool = { apple = 1, bowl = 1, bread = 1, cup = 1, egg = 1, lettuce = 1, mug = 1, pan = 1, plate = 1, pot = 1,
           potato = 1, tomato = 1, winebottle = 1 },
  clean = { apple = 1, bowl = 1, butterknife = 1, cloth = 1, cup = 1, dishsponge = 1, egg = 1, fork = 1, kettle = 1,
            knife = 1, ladle = 1, lettuce = 1, mug = 1, pan = 1, plate = 1, pot = 1, potato = 1, soapbar = 1,
            spatula = 1, spoon = 1, tomato = 1 },
}

-- rooms: receptacle kinds with {least, most} of each, object types, categories, the lamp and the
-- receptacle kinds it stands at
local ROOMS = {
  { name = "kitchen", categories = { "pick", "pick2", "heat", "cool", "clean" },
    recs = { cabinet = { 1, 4 }, coffeemachine = { 1, 1 }, countertop = { 1, 2 }, diningtable = { 0, 1 },
             drawer = { 1, 2 }, fridge = { 1, 1 }, garbagecan = { 1, 1 }, microwave = { 1, 1 }, shelf = { 0, 2 },
             sinkbasin = { 1, 1 }, stoveburner = { 1, 2 }, toaster = { 0, 1 } },
    objects = { "apple", "bowl", "bread", "butterknife", "cup", "dishsponge", "egg", "fork", "kettle", "knife",
                "ladle", "lettuce", "mug", "pan", "plate", "pot", "potato", "saltshaker", "spatula", "spoon",
                "tomato", "winebottle" } },
  { name = "bathroom", categories = { "pick", "pick2", "clean" },
    recs = { bathtubbasin = { 0, 1 }, cabinet = { 1, 3 }, countertop = { 1, 1 }, drawer = { 0, 2 },
             garbagecan = { 1, 1 }, handtowelholder = { 0, 1 }, shelf = { 0, 1 }, sinkbasin = { 1, 2 },
             toilet = { 1, 1 }, towelholder = { 0, 1 } },
    objects = { "candle", "cloth", "dishsponge", "soapbar", "soapbottle", "spraybottle", "tissuebox",
                "toiletpaper" } },
  { name = "bedroom", categories = { "pick", "pick2", "look" }, lamp = "desklamp",
    lamp_at = { "desk", "dresser", "sidetable" },
    recs = { bed = { 1, 1 }, desk = { 1, 1 }, drawer = { 1, 3 }, dresser = { 0, 1 }, garbagecan = { 1, 1 },
             laundryhamper = { 0, 1 }, safe = { 0, 1 }, shelf = { 1, 2 }, sidetable = { 0, 1 } },
    objects = { "alarmclock", "book", "bowl", "cd", "cellphone", "creditcard", "keychain", "laptop", "mug",
                "pen", "pencil", "pillow" } },
  { name = "livingroom", categories = { "pick", "pick2", "look" }, lamp = "floorlamp",
    lamp_at = { "armchair", "sidetable", "sofa" },
    recs = { armchair = { 0, 1 }, cabinet = { 0, 2 }, coffeetable = { 1, 1 }, drawer = { 0, 2 },
             garbagecan = { 1, 1 }, shelf = { 0, 2 }, sidetable = { 1, 2 }, sofa = { 1, 1 }, tvstand = { 0, 1 } },
    objects = { "box", "creditcard", "keychain", "laptop", "newspaper", "pillow", "remotecontrol", "statue",
                "vase", "watch" } },
}

local Env = {}
Env.__index = Env

function M.new(opts)
  local o = envs.options("lt.envs.household", opts, M.defaults, M.bounds)
  o.category_list = {}
  for c in o.categories:gmatch("[^,%s]+") do
    if not CATEGORY[c] then
      error(("lt.envs.household: option categories: unknown category '%s' (known: pick, pick2, look, heat, " ..
             "cool, clean)"):format(c), 2)
    end
    o.category_list[#o.category_list + 1] = c
  end
  if #o.category_list == 0 then error("lt.envs.household: option categories names no category", 2) end
  if not M.splits[o.split] then
    error(("lt.envs.household: option split = '%s': expected train or heldout"):format(o.split), 2)
  end
  local e = setmetatable({ o = o, max_steps = o.max_steps }, Env)
  e.instruction = "You are an expert agent operating in a household. Reach the goal with the commands of " ..
                  "the admissible actions. Answer with exactly one admissible action."
  return e
end

local function sorted_keys(t)
  local k = {}
  for name in pairs(t) do k[#k + 1] = name end
  table.sort(k)
  return k
end

-- a hash of a string in [0, 2^31 - 1), the same on every host (products stay below 2^53)
local function hash(s)
  local h = 5381
  for i = 1, #s do h = (h * 33 + s:byte(i)) % 2147483647 end
  return h
end

-- the text that fixes an instance: its room, receptacles, objects and places, goal; what the
-- split is decided on (and what tests compare)
local function instance_key(s)
  local parts = { s.room, table.concat(s.names, ",") }
  for _, n in ipairs(sorted_keys(s.objs)) do parts[#parts + 1] = n .. "@" .. s.objs[n].loc end
  if s.lamp then parts[#parts + 1] = s.lamp .. "@" .. s.lamp_loc end
  parts[#parts + 1] = s.goal_text
  return table.concat(parts, ";")
end
function M.split_of(key) return hash(key) % M.heldout_every == 0 and "heldout" or "train" end

local function range_int(rng, lo, hi) return lo + rng:int(hi - lo + 1) - 1 end

-- one candidate instance of `category` drawn from rng, or nil when the draw has no goal to set
local function draw(rng, o, category)
  local rooms = {}
  for _, r in ipairs(ROOMS) do
    for _, c in ipairs(r.categories) do if c == category then rooms[#rooms + 1] = r end end
  end
  local room = rng:pick(rooms)
  -- receptacles, numbered per kind; the lamp's kind at least once
  local recs, names, kinds = {}, {}, sorted_keys(room.recs)
  local lamp_kind = room.lamp and rng:pick(room.lamp_at)
  for _, kind in ipairs(kinds) do
    local n = range_int(rng, room.recs[kind][1], room.recs[kind][2])
    if kind == lamp_kind and n == 0 then n = 1 end
    for i = 1, n do
      local name = kind .. " " .. i
      recs[name] = { name = name, kind = kind, openable = OPENABLE[kind] or false, open = false, does = DEVICE[kind] }
      names[#names + 1] = name
    end
  end
  table.sort(names)
  local holders = {}
  for _, n in ipairs(names) do if not NO_OBJECTS[recs[n].kind] then holders[#holders + 1] = n end end
  -- the goal's object type, then its objects (two or three for pick2, one or two else)
  local types = {}
  for _, t in ipairs(room.objects) do
    if not STATE[category] or TAKES[category][t] then types[#types + 1] = t end
  end
  if #types == 0 then return nil end
  local gtype = rng:pick(types)
  local objs, per_type = {}, {}
  local function add(t)
    per_type[t] = (per_type[t] or 0) + 1
    local name = t .. " " .. per_type[t]
    objs[name] = { name = name, type = t, loc = rng:pick(holders) }
  end
  for _ = 1, (category == "pick2" and range_int(rng, 2, 3) or rng:int(2)) do add(gtype) end
  for _ = 1, o.objects do add(rng:pick(room.objects)) end
  -- the target: a receptacle kind without an object of the goal's type (so the goal does not hold
  -- at the start), not the device of the category
  local s = { room = room.name, recs = recs, names = names, objs = objs, loc = nil, hold = nil }
  local goal = { category = category, type = gtype }
  if category == "look" then
    s.lamp, s.lamp_on = room.lamp .. " 1", false
    local at = {}
    for _, n in ipairs(names) do if recs[n].kind == lamp_kind then at[#at + 1] = n end end
    s.lamp_loc = rng:pick(at)
    goal.lamp = room.lamp
  else
    local targets = {}
    for _, kind in ipairs(kinds) do
      local ok = recs[kind .. " 1"] ~= nil and not NO_OBJECTS[kind] and DEVICE[kind] ~= category
      for _, ob in pairs(objs) do
        if ob.type == gtype and recs[ob.loc].kind == kind then ok = false end
      end
      if ok then targets[#targets + 1] = kind end
    end
    if #targets == 0 then return nil end
    goal.target = rng:pick(targets)
  end
  s.goal = goal
  s.goal_text = TEMPLATES[category][rng:int(2)]:format(gtype, goal.target or goal.lamp)
  return s
end

-- task instance `seed` of split `split`: candidates drawn from the seed until one is of the split
local function generate(o, seed, split)
  local rng = envs.rng(seed)
  local category = rng:pick(o.category_list)
  for _ = 1, 1000 do
    local s = draw(rng, o, category)
    if s then
      s.key = instance_key(s)
      if M.split_of(s.key) == split then return s end
    end
  end
  error(("lt.envs.household: seed %d: no %s instance of category %s after 1000 draws"):format(seed, split, category))
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
  if self.s.lamp_loc == rname then table.insert(list, 1, self.s.lamp) end
  return list
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
        for _, ob in ipairs(self:contents(r.name)) do
          if ob ~= s.lamp then acts[#acts + 1] = ("take %s from %s"):format(ob, r.name) end
        end
      end
    end
    if s.hold and r.does and TAKES[r.does][s.objs[s.hold].type] then
      acts[#acts + 1] = ("%s %s with %s"):format(r.does, s.hold, r.name)
    end
    if s.lamp_loc == r.name then acts[#acts + 1] = "use " .. s.lamp end
    acts[#acts + 1] = "examine " .. r.name
  end
  acts[#acts + 1] = "inventory"
  acts[#acts + 1] = "look"
  return acts
end

function Env:anchor()
  local s, parts = self.s, {}
  parts[1] = "at=" .. (s.loc or "-") .. ";hold=" .. (s.hold or "-") .. ";lamp=" .. (s.lamp_on and "on" or "off") ..
             ";open="
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
  return ("%s\nYour task is to: %s.\nAdmissible actions: %s"):format(feedback, self.s.goal_text,
                                                                    table.concat(acts, ", ")),
         self:anchor()
end

function Env:describe_at(r)
  if r.openable and not r.open then return ("The %s is closed."):format(r.name) end
  if r.openable then return ("The %s is open. In it, you see %s."):format(r.name, a_list(self:contents(r.name))) end
  return ("On the %s, you see %s."):format(r.name, a_list(self:contents(r.name)))
end

function Env:info(extra)
  extra.category, extra.goal, extra.split = self.s.goal.category, self.s.goal, self.o.split
  return extra
end

function Env:reset(seed)
  self.s = generate(self.o, seed, self.o.split)
  self.steps = 0
  local obs, anchor = self:observe(("You are in the middle of a room. Looking quickly around you, you see %s.")
                                   :format(a_list(self.s.names)))
  return obs, self:info{ anchor = anchor, instance = self.s.key }
end

-- whether the goal holds (ALFWorld's goal conditions, on types)
function Env:solved()
  local s, g = self.s, self.s.goal
  if g.category == "look" then
    return s.hold ~= nil and s.objs[s.hold].type == g.type and s.lamp_on and s.loc == s.lamp_loc
  end
  local count = {}
  for _, ob in pairs(s.objs) do
    local r = s.recs[ob.loc]
    if ob.type == g.type and r and r.kind == g.target and (not STATE[g.category] or ob[STATE[g.category]]) then
      count[ob.loc] = (count[ob.loc] or 0) + 1
      if g.category ~= "pick2" or count[ob.loc] >= 2 then return true end
    end
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
  if verb and STATE[verb] then
    s.objs[ob][STATE[verb]] = true
    return ("You %s the %s using the %s."):format(verb, ob, r.name)
  end
  if a:match("^use ") then
    s.lamp_on = not s.lamp_on
    return ("You turn %s the %s."):format(s.lamp_on and "on" or "off", s.lamp)
  end
  if a:match("^examine ") then return self:describe_at(r) end
  if a == "look" then
    if not r then return ("You are in the middle of a room. Looking quickly around you, you see %s."):format(a_list(s.names)) end
    return ("You are facing the %s. Next to it, you see nothing."):format(r.name)
  end
  if a == "inventory" then
    if not s.hold then return "You are not carrying anything." end
    return ("You are carrying: a %s."):format(s.hold)
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
    feedback = "Nothing happens."
  end
  local solved = valid and self:solved()
  if solved then
    reward = self.o.solve_reward
    feedback = feedback .. " You have completed the task."
  end
  local done = solved or self.steps >= self.o.max_steps
  if done and not solved then feedback = feedback .. (" Out of steps (%d)."):format(self.o.max_steps) end
  local obs, anchor = self:observe(feedback)
  return obs, reward, done, self:info{ anchor = anchor, solved = solved, valid = valid,
                                       penalty = valid and 0 or self.o.invalid_penalty }  -- (the penalty within reward)
end

return M

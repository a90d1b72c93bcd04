-- lt/envs/sokoban: a small Sokoban grid, one box and one target, generated from the seed by
-- playing backwards from the solved state (the player pulls the box away from the target), so
-- every instance is solvable: replaying the pulls as pushes solves it. The box starts at least
-- two cells (Manhattan) from the target.
--
-- Observation: a line of feedback, the grid (# wall, . floor, P player, B box, T target,
-- * box on target, + player on target) and "Admissible actions: up, down, left, right".
-- Rewards: solve_reward (1) for the move that puts the box on the target (done); -step_penalty
-- (0.1) for every other move, a move into a wall or an unmovable box included (nothing
-- changes); -invalid_penalty (0.2) for text that is none of the four actions (nothing changes,
-- the observation says it was invalid). The episode ends (done) when solved or after
-- max_steps actions, invalid ones included. info = { anchor = the grid text, solved, valid,
-- penalty (invalid_penalty on an invalid action, else 0) }.
-- Options: size (5..10, the grid with its border walls), walls (inner walls, default 1),
-- pulls (reverse moves tried, default 40), max_steps (20), step_penalty, invalid_penalty,
-- solve_reward.
local envs = require "lt.envs"
local M = {}

M.defaults = { size = 6, walls = 1, pulls = 40, max_steps = 20, step_penalty = 0.1, invalid_penalty = 0.2,
               solve_reward = 1.0 }
M.bounds = { size = { 5, 10, int = true }, walls = { 0, 8, int = true }, pulls = { 1, 1000, int = true },
             max_steps = { 1, 10000, int = true }, step_penalty = { 0, 100 }, invalid_penalty = { 0, 100 },
             solve_reward = { -100, 100 } }

local DIRS = { up = { -1, 0 }, down = { 1, 0 }, left = { 0, -1 }, right = { 0, 1 } }
local ACTIONS = { "up", "down", "left", "right" }

local Env = {}
Env.__index = Env

function M.new(opts)
  local o = envs.options("lt.envs.sokoban", opts, M.defaults, M.bounds)
  local e = setmetatable({ o = o, max_steps = o.max_steps }, Env)
  e.instruction = "You are playing Sokoban on a grid. Push the box (B) onto the target (T): you move " ..
                  "up, down, left or right, and walking into the box pushes it one cell if the cell " ..
                  "behind it is free. Answer with one action."
  return e
end

-- the layout of `seed`: walls[r][c], target {r, c}, box {r, c}, player {r, c}
local function generate(o, seed)
  local n = o.size
  local rng = envs.rng(seed)
  for _ = 1, 100 do  -- attempts: a walk that left the box next to the target is drawn again
    local wall = {}
    for r = 1, n do
      wall[r] = {}
      for c = 1, n do wall[r][c] = r == 1 or c == 1 or r == n or c == n end
    end
    local free = {}
    for r = 2, n - 1 do
      for c = 2, n - 1 do free[#free + 1] = { r, c } end
    end
    rng:shuffle(free)
    for k = 1, o.walls do
      local w = free[k]
      wall[w[1]][w[2]] = true
    end
    local target = free[o.walls + 1]
    local box = { target[1], target[2] }
    -- the player starts on a free neighbour of the box
    local starts = {}
    for _, a in ipairs(ACTIONS) do
      local d = DIRS[a]
      if not wall[box[1] + d[1]][box[2] + d[2]] then starts[#starts + 1] = { box[1] + d[1], box[2] + d[2] } end
    end
    if #starts > 0 then
      local p = rng:pick(starts)
      local moved = false
      for _ = 1, o.pulls do
        local d = DIRS[ACTIONS[rng:int(4)]]
        local to = { p[1] + d[1], p[2] + d[2] }
        if not wall[to[1]][to[2]] and not (to[1] == box[1] and to[2] == box[2]) then
          -- a pull when the box is right behind the player (at p - d) and a coin says so
          if box[1] == p[1] - d[1] and box[2] == p[2] - d[2] and rng:int(4) > 1 then
            box = { p[1], p[2] }
            moved = true
          end
          p = to
        end
      end
      if moved and math.abs(box[1] - target[1]) + math.abs(box[2] - target[2]) >= 2 then
        return { wall = wall, target = target, box = box, player = p }
      end
    end
  end
  error(("lt.envs.sokoban: seed %d: no instance after 100 attempts (size %d, walls %d)"):format(seed, n, o.walls))
end

function Env:grid()
  local s, n, lines = self.s, self.o.size, {}
  for r = 1, n do
    local row = {}
    for c = 1, n do
      local t = s.target[1] == r and s.target[2] == c
      local ch
      if s.wall[r][c] then ch = "#"
      elseif s.box[1] == r and s.box[2] == c then ch = t and "*" or "B"
      elseif s.player[1] == r and s.player[2] == c then ch = t and "+" or "P"
      else ch = t and "T" or "." end
      row[c] = ch
    end
    lines[r] = table.concat(row)
  end
  return table.concat(lines, "\n")
end

function Env:observe(feedback)
  local grid = self:grid()
  return feedback .. "\n" .. grid .. "\nAdmissible actions: " .. table.concat(ACTIONS, ", "), grid
end

function Env:reset(seed)
  self.s = generate(self.o, seed)
  self.steps, self.seed = 0, seed
  local obs, grid = self:observe("A new puzzle.")
  return obs, { anchor = grid }
end

function Env:step(action)
  local s, o = self.s, self.o
  if s == nil then error("step before reset") end
  self.steps = self.steps + 1
  local a = envs.normalize_action(action)
  local d = DIRS[a]
  local reward, feedback, valid = 0, nil, d ~= nil
  if not d then
    reward = -o.invalid_penalty
    feedback = ("Invalid action %q: answer with one of up, down, left, right."):format(action:sub(1, 60))
  else
    local to = { s.player[1] + d[1], s.player[2] + d[2] }
    if s.wall[to[1]][to[2]] then
      feedback = ("You moved %s into a wall: nothing happens."):format(a)
    elseif to[1] == s.box[1] and to[2] == s.box[2] then
      local beyond = { to[1] + d[1], to[2] + d[2] }
      if s.wall[beyond[1]][beyond[2]] then
        feedback = ("You pushed the box %s against a wall: it does not move."):format(a)
      else
        s.box, s.player = beyond, to
        feedback = ("You pushed the box %s."):format(a)
      end
    else
      s.player = to
      feedback = ("You moved %s."):format(a)
    end
    reward = 0 - o.step_penalty
  end
  local solved = s.box[1] == s.target[1] and s.box[2] == s.target[2]
  if solved then
    reward = o.solve_reward
    feedback = feedback .. " The box is on the target: solved!"
  end
  local done = solved or self.steps >= o.max_steps
  if done and not solved then feedback = feedback .. (" Out of steps (%d)."):format(o.max_steps) end
  local obs, grid = self:observe(feedback)
  -- penalty: the part of reward that is the invalid-action penalty (lt.envs.agent.rows may move it
  -- to the step's row alone, as verl-agent applies it)
  return obs, reward, done, { anchor = grid, solved = solved, valid = valid, penalty = valid and 0 or o.invalid_penalty }
end

return M

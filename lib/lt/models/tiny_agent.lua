-- lt/models/tiny_agent.lua: the recipe of the embedded default policy of the agent study
-- (experiments/agent/agent.lua): a tiny Qwen3 with its own BPE tokenizer, pre-trained on CPU in a
-- few minutes on Sokoban turns (lt.envs.sokoban) played by a noisy expert: at each turn the
-- first move of a shortest solution (breadth-first search over player and box positions)
-- with probability 1 - noise, else one of the four moves at random. Each turn is a document
-- "GRID\nAction: MOVE" in the prompt format of lt.envs.agent. The model learns the moves and, in
-- part, which one solves; what is left for RL is to prefer the solving move more often.
-- Episodes are played from seeds >= --seed_base, so the agent study's held-out seeds (below
-- it) are never seen in pre-training. lt.models.get("tiny-agent") makes it with seed 1.
local study = require "lt.study"
local agent = require "lt.envs.agent"
local M = {}

M.args = study.merge_args(
  study.train_args{ steps = 500, lr = 3e-3, warmup = 0.05, seq_len = 64, micro_batch = 16, eval_every = 0 },
  study.checkpoint_args,
  study.model_args{ layers = 4, vocab = 300 },
  { out = { "models/tiny-agent", "the model folder to write" },
    episodes = { 3000, "noisy-expert episodes played for the pre-training turns", int = true, min = 1 },
    noise = { 0.5, "share of the expert's turns that are a random move instead", min = 0, max = 1 },
    size = { 5, "Sokoban grid size (lt.envs.sokoban)", int = true, min = 5, max = 10 },
    seed_base = { 1000000, "first seed of the pre-training episodes (the agent study holds out lower ones)",
                  int = true, min = 0 } })

local DIRS = { up = { -1, 0 }, down = { 1, 0 }, left = { 0, -1 }, right = { 0, 1 } }
local ACTIONS = { "up", "down", "left", "right" }

-- the first move of a shortest solution from state s (lt.envs.sokoban's), or nil
function M.expert_move(s)
  local function key(p, b) return p[1] * 1000 + p[2] * 100 + b[1] * 10 + b[2] end
  local start = { p = s.player, b = s.box, first = nil }
  local seen, queue, head = { [key(s.player, s.box)] = true }, { start }, 1
  while head <= #queue do
    local cur = queue[head]
    head = head + 1
    for _, a in ipairs(ACTIONS) do
      local d = DIRS[a]
      local to = { cur.p[1] + d[1], cur.p[2] + d[2] }
      local box = cur.b
      local ok = not s.wall[to[1]][to[2]]
      if ok and to[1] == box[1] and to[2] == box[2] then
        local beyond = { box[1] + d[1], box[2] + d[2] }
        ok = not s.wall[beyond[1]][beyond[2]]
        box = beyond
      end
      if ok then
        local first = cur.first or a
        if box[1] == s.target[1] and box[2] == s.target[2] then return first end
        local k = key(to, box)
        if not seen[k] then
          seen[k] = true
          queue[#queue + 1] = { p = to, b = box, first = first }
        end
      end
    end
  end
  return nil
end

-- make(cfg): cfg as M.args; cfg.seed fixes the noise draws, model init, packing and data order
function M.make(cfg)
  local checkpoints = study.checkpoints(cfg)()
  local rng = lt.envs.rng(cfg.seed or lt.run.seed("tasks.agent") % 2147483647)
  local work = cfg.out .. ".work"
  lt.fs.remove(work)
  lt.fs.mkdir(work)
  local corpus = assert(io.open(work .. "/turns.txt", "w"))
  local docs, solved = 0, 0
  for e = 1, cfg.episodes do
    local env = lt.envs.get("sokoban", { size = cfg.size })
    local obs = env:reset(cfg.seed_base + e)
    for _ = 1, env.max_steps do
      local move = M.expert_move(env.inner.s)
      if not move or rng:int(1000) <= cfg.noise * 1000 then move = ACTIONS[rng:int(4)] end
      corpus:write(agent.prompt(obs), " ", move, "\n%\n")
      docs = docs + 1
      local o2, _, done, info = env:step(move)
      obs = o2
      if done then
        if info.solved then solved = solved + 1 end
        break
      end
    end
  end
  corpus:close()
  lt.run.param{ pretrain_docs = docs, pretrain_solved = solved }
  local m, r = require("lt.models").pretrain(cfg, work .. "/turns.txt", checkpoints)
  lt.run.artifact(cfg.out .. "/model.safetensors", { kind = "model" })
  lt.fs.remove(work)
  print(("tiny-agent: %s: %d params, %d turns of %d noisy-expert episodes (%d solved), %d steps, %.0f tokens/s, "
         .. "val loss %.3f"):format(cfg.out, m:n_params(), docs, cfg.episodes, solved, r.steps, r.tokens_per_s,
                                   r.val_loss or -1))
  return r
end

return M

-- lt/experiment.lua: what every study script starts with: its configuration from defaults
-- and command-line overrides, recorded as the run's params.
local args = require "lt.args"
local M = {}

-- exp.args{steps = 200, lr = 3e-5}: overridable with --steps=1000; every resolved value is
-- logged with lt.run.param, so that `ltrun show RUN` and SQL see the configuration used.
function M.args(defaults, argv)
  local opts = args.parse(argv or arg or {})
  local cfg = args.merge(defaults, opts)
  if lt.run then
    for k, v in pairs(cfg) do lt.run.param(k, v) end
  end
  return cfg
end

-- Checkpointing of a study's trainings from its options checkpoint_dir, checkpoint_every and
-- resume (each study that trains declares them). `names`: one sub-folder of checkpoint_dir
-- per training (freeze_deep's plans); nil for a study with one training, which uses the
-- folder itself. --resume=true without --checkpoint_dir, or with no checkpoint in the folder
-- (in none of the sub-folders), is an error naming the folder: it never starts afresh
-- silently. With names, a training whose sub-folder has no checkpoint yet (the run ended
-- before it began) starts from step 0. Returns function(name) → the options to merge into
-- that training's lt.train.causal_lm / lt.rl.grpo options (empty without a folder).
function M.checkpoints(cfg, names)
  local dir = cfg.checkpoint_dir or ""
  if dir == "" then
    if cfg.resume then
      error("--resume=true needs --checkpoint_dir=DIR (the folder the run to resume wrote its checkpoints to)", 0)
    end
    return function() return {} end
  end
  if lt.fs.exists(dir) and not lt.fs.is_dir(dir) then
    error(("--checkpoint_dir=%s is a file, not a folder"):format(dir), 0)
  end
  local function sub(name) return name and (dir .. "/" .. name) or dir end
  if cfg.resume then
    local any = false
    for _, n in ipairs(names or { false }) do
      if lt.train.latest_checkpoint(sub(n or nil)) then any = true end
    end
    if not any then
      local where = names and ("none of its folders " .. table.concat(names, ", ") .. " has a checkpoint")
                    or ("no " .. dir .. "/latest")
      error(("--resume=true: no checkpoint to resume from in %s (%s); to start afresh, leave --resume off"):format(
        dir, where), 0)
    end
  end
  local every = tonumber(cfg.checkpoint_every) or 0
  if every < 0 then error(("--checkpoint_every=%s: expected 0 (only at the end) or more"):format(cfg.checkpoint_every), 0) end
  return function(name)
    local d = sub(name)
    return { checkpoint_dir = d, checkpoint_every = every > 0 and every or nil,
             resume = (cfg.resume and lt.train.latest_checkpoint(d) ~= nil) or nil }
  end
end

-- The embedded default base model of the studies (models/tiny-qwen3, relative to the
-- current folder): made by experiments/pretrain_tiny.lua, as a child run, when it is missing.
M.default_model_path = "models/tiny-qwen3"
local root = debug.getinfo(1, "S").source:match("^@(.*)/lib/lt/experiment%.lua$") or "."
-- the project's folder (experiments/, lib/, tests/ live there), for scripts that call its files
M.root = root

function M.default_model(path)
  path = path or M.default_model_path
  local f = io.open(path .. "/config.json")
  if f then
    f:close()
    return path
  end
  io.stderr:write(("no model at %s: making the default base model (experiments/pretrain_tiny.lua)\n"):format(path))
  lt.run.child("pretrain_tiny", assert(loadfile(root .. "/experiments/pretrain_tiny.lua")), { "--out=" .. path })
  return path
end

-- A random model for a benchmark, made in a fresh temporary folder from an lt.model.new
-- spec (without `out`). Returns its path and a function that removes it.
function M.temp_model(spec)
  local dir = os.tmpname()  -- a unique name; the empty file it creates makes way for the folder
  os.remove(dir)
  lt.fs.mkdir(dir)          -- marked as ltrun's, so lt.fs.remove may delete it
  local s = { out = dir .. "/model" }
  for k, v in pairs(spec) do s[k] = v end
  lt.model.new(s)
  return s.out, function() lt.fs.remove(dir) end
end

-- Runs a command without a shell: `command` is a string of words split on whitespace (e.g.
-- a bench's --hf="scripts/check-torch2 --python"), `args` more words passed as they are
-- (paths with spaces or quotes stay one argument). Returns its stdout, true when it exited
-- 0, and the argv as one line for messages. Its stderr goes to ours.
function M.capture(command, args)
  local argv = {}
  for w in command:gmatch("%S+") do argv[#argv + 1] = w end
  assert(#argv > 0, "exp.capture: empty command")
  for _, a in ipairs(args or {}) do argv[#argv + 1] = tostring(a) end
  local out = os.tmpname()
  local pid = lt.proc.spawn(argv, { stdout = out })
  local status = lt.proc.wait(pid)
  local f = io.open(out)
  local text = f and f:read("*a") or ""
  if f then f:close() end
  os.remove(out)
  return text, status.code == 0 and status.signal == 0, table.concat(argv, " ")
end

-- for name, v in exp.sorted(t): pairs in key order, so runs happen in a stable order
function M.sorted(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local i = 0
  return function()
    i = i + 1
    local k = keys[i]
    if k ~= nil then return k, t[k] end
  end
end

return M

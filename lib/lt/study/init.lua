-- lt/study/init.lua (require "lt.study", the front door of a study): what a study is made of:
-- study.study (declared args, presets, --help, the study as a module another study calls), the arg
-- groups studies share and what turns them into options, checkpoint folders. study.args (undeclared
-- defaults) is for benchmarks and tests.
local args = require "lt.study.args"
local M = {}

M.study = require("lt.study.define").study

-- study.args{steps = 200, lr = 3e-5}: overridable with --steps=1000; every resolved value is
-- logged with lt.run.param, so that `ltrun show RUN` and SQL see the configuration used.
function M.args(defaults, argv)
  local opts = args.parse(argv or arg or {})
  local cfg = args.merge(defaults, opts)
  if lt.run then
    for k, v in pairs(cfg) do lt.run.param(k, v) end
  end
  return cfg
end

-- ---- arg groups that studies share (study.study's arg specs) -----------------------------------
-- study.merge_args(a, b, ...): one spec table from several; an arg declared twice is an error
function M.merge_args(...)
  local out = {}
  for i = 1, select("#", ...) do
    for k, spec in pairs((select(i, ...))) do
      if out[k] then error(("study.merge_args: arg %s is declared twice"):format(k), 2) end
      out[k] = spec
    end
  end
  return out
end

-- ---- a function's options as a study's args ---------------------------------------------------
-- study.args_of("lt.rl.grpo", {max_response = 24}[, keys]): the options (`keys` of them) of a
-- function the runtime
-- declares (lt.api: `ltrun doc api`, docs/reference/lua-api.md) as arg specs, each with its
-- declared default, kind and range, so that a study takes them as its own args and --help shows
-- the page's defaults. `overrides` changes defaults (presets are overrides too), and brings in an
-- option the function declares no plain default for (kl: the algo's; data: a table or a path) at
-- a stand-in value that means "not given": cfg holds nil there until a value is given (the arg's
-- `absent`, lt.study.define). Options with neither are not args. study.options_for passes the
-- values on.
local function declared(fn, caller)
  local api = lt.api(fn)
  if not api then error(("%s: %s is not a declared function (lt.api() lists them)"):format(caller, tostring(fn)), 3) end
  return api
end

local function default_value(o)
  if o.kind == "integer" or o.kind == "number" then return tonumber(o.default) end
  if o.kind == "boolean" then return o.default == "true" end
  if o.kind == "string" then return o.default end
end

function M.args_of(fn, overrides, keys)
  local api, specs, only = declared(fn, "study.args_of"), {}, nil
  if keys then only = {} for _, k in ipairs(keys) do only[k] = true end end
  for _, o in ipairs(api.options) do
    local v = (overrides or {})[o.key]
    local absent = o.default == nil and v or nil
    if v == nil and o.default ~= nil then v = default_value(o) end
    if v ~= nil and (not only or only[o.key]) then
      specs[o.key] = { v, o.doc, int = o.kind == "integer" or nil, min = o.min, max = o.max,
                       choices = o.choices, path = o.kind:match("^path") and type(v) == "string" or nil,
                       absent = absent }
    end
  end
  for k in pairs(overrides or {}) do
    if not specs[k] then error(("study.args_of: %s has no option %s"):format(fn, tostring(k)), 2) end
  end
  return specs
end

-- study.options_for("lt.rl.grpo", cfg, {data = items}, ...): the options of fn that cfg holds
-- (the args study.args_of made, at the values given), then each extra table's values over them
function M.options_for(fn, cfg, ...)
  local out = {}
  for _, o in ipairs(declared(fn, "study.options_for").options) do out[o.key] = cfg[o.key] end
  for i = 1, select("#", ...) do
    for k, v in pairs((select(i, ...)) or {}) do out[k] = v end
  end
  return out
end

-- the training loop's args (lt.train.causal_lm); study.train_args{steps = 300, lr = 1e-3}: the
-- group with these defaults instead of the ones below
local train_specs = {
  steps = { 100, "optimizer steps", int = true, min = 1 },
  lr = { 1e-3, "peak learning rate (AdamW)", min = 0 },
  warmup = { 0.1, "warmup: a share of the steps (< 1) or a number of steps", min = 0 },
  weight_decay = { 0.01, "AdamW weight decay", min = 0 },
  beta1 = { 0.9, "AdamW beta1", min = 0, max = 1 },
  beta2 = { 0.95, "AdamW beta2", min = 0, max = 1 },
  clip_grad = { 1.0, "gradient-norm clipping (0: off)", min = 0 },
  seq_len = { 64, "tokens per training window", int = true, min = 2 },
  micro_batch = { 8, "windows per micro-batch", int = true, min = 1 },
  grad_accum = { 1, "micro-batches per optimizer step", int = true, min = 1 },
  eval_every = { 0, "held-out loss every N steps (0: never)", int = true, min = 0 },
}
function M.train_args(defaults) return M.with_defaults(train_specs, defaults or {}) end

-- lt.train.causal_lm's options from cfg's training args, with `extra` (data, seed, ...) added
function M.train_options(cfg, extra)
  local o = { steps = cfg.steps, lr = cfg.lr, warmup = cfg.warmup, weight_decay = cfg.weight_decay,
              betas = { cfg.beta1, cfg.beta2 }, clip_grad = cfg.clip_grad, seq_len = cfg.seq_len,
              micro_batch = cfg.micro_batch, grad_accum = cfg.grad_accum,
              eval_every = (cfg.eval_every or 0) > 0 and cfg.eval_every or nil }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

-- a copy of arg specs with other defaults: study.with_defaults(study.checkpoint_args, {checkpoint_every
-- = 25})
function M.with_defaults(specs, defaults)
  local out = {}
  for k, spec in pairs(specs) do
    local copy = {}
    for kk, v in pairs(spec) do copy[kk] = v end
    out[k] = copy
  end
  for k, v in pairs(defaults) do
    if not out[k] then error(("study.with_defaults: %s is not among the args"):format(k), 2) end
    out[k][1] = v
  end
  return out
end

-- the shape of a model a recipe makes (lt.model.new); study.model_args{layers = 8, vocab = 2048}:
-- the group with these defaults
local model_specs = {
  layers = { 4, "decoder blocks (layers)", int = true, min = 1 },
  hidden = { 128, "hidden size", int = true, min = 8 },
  heads = { 4, "attention heads", int = true, min = 1 },
  kv_heads = { 2, "key/value heads", int = true, min = 1 },
  vocab = { 1024, "BPE vocabulary size to train", int = true, min = 260 },
}
function M.model_args(defaults) return M.with_defaults(model_specs, defaults or {}) end

-- checkpointing of a study's trainings (study.checkpoints below turns them into options)
M.checkpoint_args = {
  checkpoint_dir = { "", "checkpoint folder (\"\": no checkpoints)" },
  checkpoint_every = { 100, "a checkpoint every N steps (0: only at the end)", int = true, min = 0 },
  resume = { false, "continue from the latest checkpoint in --checkpoint_dir" },
}

-- "key=value;key=value" (an arg that passes args on to another study) → {key = value} with
-- values as on the command line (numbers, true/false, text); `name` for messages
function M.pairs_arg(text, name)
  local out = {}
  for part in tostring(text):gmatch("[^;]+") do
    local k, v = part:match("^%s*([%w_]+)%s*=(.*)$")
    if not k then error(("%s: '%s' is not key=value (pairs are separated by ;)"):format(name, part), 0) end
    out[k] = args.coerce(v)
  end
  return out
end

-- comma-separated text → list ("" → {})
function M.list(text)
  local out = {}
  for x in tostring(text):gmatch("[^,]+") do out[#out + 1] = x end
  return out
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

-- the project's folder (experiments/, lib/, tests/ live there), for scripts that call its files
local root = debug.getinfo(1, "S").source:match("^@(.*)/lib/lt/study/init%.lua$") or "."
M.root = root
-- (ltrun's package.path holds this folder after lib/: a module's name is its path from here,
-- so `require "experiments.freeze_deep.freeze_deep"` is that study, for a study that calls it,
-- and `require "experiments.freeze_deep.cpt"` a module of that study alone; bindings/interp.cpp)

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
  assert(#argv > 0, "study.capture: empty command")
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

-- for name, v in study.sorted(t): pairs in key order, so runs happen in a stable order
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

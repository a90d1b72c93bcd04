-- lt/init.lua: the Lua half of the `lt` table. The C++ bindings fill `lt` first (tensors,
-- json, run store); this file adds what is simplest in Lua. Loaded once at start-up.
-- Modules with two halves: lt.run (C++: runtime/store/script.cpp, bindings/run.cpp: seed, id,
-- root, param, log, log_layers, artifact, query, flush, leases, _begin_child / _end; Lua, here:
-- lt.run.child), lt.eval (C++: runtime/eval/script.cpp; Lua: lt.eval.run, lib/lt/tasks/eval.lua)
-- and lt.layers (C++: runtime/train/script.cpp, the freeze specs; Lua: lib/lt/layers.lua, the
-- grammar of block-selection args). lt.main (below) is how ltrun runs a script.
local lt = lt

-- lt.run.child(name, fn, ...): a nested run with its own status. Returns fn's results; if fn
-- fails the child is marked failed (interrupted after Ctrl-C) and the error goes on up.
function lt.run.child(name, fn, ...)
  assert(type(name) == "string", "lt.run.child: argument 1: expected a run name")
  assert(type(fn) == "function", "lt.run.child: argument 2: expected a function")
  local id = lt.run._begin_child(name)
  local function finish(ok, ...)
    if ok then
      lt.run._end(id, "ok")
      return ...
    end
    local err = ...
    lt.run._end(id, "failed", tostring(err))
    error(err, 0)
  end
  return finish(xpcall(fn, debug.traceback, ...))
end

-- lt.check_options(opts, fn, known): the Lua side of the bindings' check_options
-- (bindings/luat.h): opts is nil or a table whose keys are all names in the list `known`;
-- else an error "fn: unknown option 'KEY' (known: ...)" at the caller's caller (level 3).
function lt.check_options(opts, fn, known)
  if opts == nil then return end
  if type(opts) ~= "table" then error(("%s: options: expected a table, got %s"):format(fn, type(opts)), 3) end
  local ok, unknown = {}, {}
  for _, k in ipairs(known) do ok[k] = true end
  for k in pairs(opts) do
    if type(k) ~= "string" then error(("%s: options: keys must be option names, found the key %s"):format(fn, tostring(k)), 3) end
    if not ok[k] then unknown[#unknown + 1] = k end
  end
  if #unknown == 0 then return end
  table.sort(unknown)
  local names = {}
  for i, k in ipairs(known) do names[i] = k end
  table.sort(names)
  error(("%s: unknown option '%s' (known: %s)"):format(fn, unknown[1], table.concat(names, ", ")), 3)
end

-- lt.main(chunk): how ltrun runs a script (bindings/interp.cpp, Interp::run): the chunk with the
-- command line's args (arg[1], arg[2], ... as its varargs), then, when it returns a study (`return
-- study.study{...}`), that study on the command line (lt.study.define's main: --help, the args
-- checked, study.run). Loading a study's file never runs it: another study `require`s it and
-- calls study.run.
function lt.main(chunk)
  local result = chunk(unpack(arg or {}, 1, arg and #arg or 0))
  if type(result) == "table" and package.loaded["lt.study.define"] then
    local define = package.loaded["lt.study.define"]
    if define.is_study and define.is_study(result) then return define.main(result, arg or {}) end
  end
  return result
end

-- The Lua halves and modules of `lt`, assembled here and nowhere else (a module returns its
-- functions; it does not add itself to lt).
local layers = require "lt.layers"  -- the block-selection grammar of every study
lt.layers.parse, lt.layers.spec, lt.layers.check = layers.parse, layers.spec, layers.check
local eval = require "lt.tasks.eval"  -- lt.eval.run: a benchmark by name, and what reads its results
for _, k in ipairs{ "run", "items", "solved", "newly_solved", "vote_runs", "vote_items" } do lt.eval[k] = eval[k] end
lt.models = require "lt.models"  -- lt.models.get("tiny-qwen3"): the embedded default models
lt.envs = require "lt.envs"  -- lt.envs.get("sokoban"), lt.envs.rollout: text environments for agentic RL


-- The functions of lt written in Lua, each with its signature and one line: the API page
-- (docs/reference/lua-api.md, `ltrun doc api`) shows them beside the runtime's declarations.
lt._lua_docs = {
  ["lt.run.child"] = { "lt.run.child(name, fn, ...) → fn's results", "fn in a nested run with its own status (failed, interrupted: the error goes on up)" },
  ["lt.check_options"] = { "lt.check_options(opts, fn, known)", "opts is nil or a table of keys among `known`, else an error naming fn and the key" },
  ["lt.main"] = { "lt.main(chunk) → its results", "how ltrun runs a script: the chunk with arg, then the study it returns on the command line" },
  ["lt.layers.parse"] = { "lt.layers.parse(m | n, text[, name]) → {block, ...}", "the blocks a block-selection text names (all, 3, -1, 10-15, middle:K, shallow:F, deep:F, a,b)" },
  ["lt.layers.spec"] = { "lt.layers.spec(m | n, text[, name]) → {layers = {...}}", "lt.layers.parse's blocks as a freeze spec (m:freeze, m:train_only)" },
  ["lt.layers.check"] = { "lt.layers.check(text[, name]) → true", "text is in the block grammar with whole, finite numbers (no model: a study's `layers = true` arg)" },
  ["lt.eval.run"] = { "lt.eval.run(model, spec[, opts]) → {[protocol] = {acc, n, ...}, items}", "scores a model on a benchmark spec (ceval:DIR, gsm8k:FILE, humaneval:FILE, ifeval:FILE, mgsm:DIR, antonyms, ...)" },
  ["lt.eval.items"] = { "lt.eval.items(name[, {n=, seed=}]) → items", "the items of a built-in benchmark (antonyms, antonyms_heldout)" },
  ["lt.eval.solved"] = { "lt.eval.solved(run_id, bench, protocol) → {id = true}", "the ids a run answered correctly" },
  ["lt.eval.newly_solved"] = { "lt.eval.newly_solved(base, model) → {id = true}", "ids solved in model and not in base (sets of lt.eval.solved)" },
  ["lt.eval.vote_items"] = { "lt.eval.vote_items(preds, items, compare) → {acc, n, correct, items}", "the majority vote over lists of answers per item" },
  ["lt.eval.vote_runs"] = { "lt.eval.vote_runs{runs=, bench=, protocol=, compare=} → {acc, n, items}", "the majority vote of several runs on the same items" },
  ["lt.models.dir"] = { "lt.models.dir() → folder", "the models folder ($LTRUN_MODELS, else ./models)" },
  ["lt.models.get"] = { "lt.models.get(name) → path", "an embedded default model's folder, made by its recipe when missing" },
  ["lt.models.resolve"] = { "lt.models.resolve(path, name) → path", "path unless it is \"\", else lt.models.get(name)" },
  ["lt.models.pretrain"] = { "lt.models.pretrain(cfg, corpus, checkpoints, new) → model, result, packed", "a recipe's pre-training: a BPE and a model from cfg, trained on corpus, saved" },
  ["lt.models.with_lock"] = { "lt.models.with_lock(path, fn)", "fn() holding an exclusive lock on path" },
  ["lt.envs.register"] = { "lt.envs.register(name, ctor)", "a text environment: ctor(opts) → env" },
  ["lt.envs.get"] = { "lt.envs.get(name[, opts]) → env", "a new environment, checked (lt.envs.check)" },
  ["lt.envs.check"] = { "lt.envs.check(env, name) → env", "env wrapped so that a broken interface is an error naming it" },
  ["lt.envs.prompt"] = { "lt.envs.prompt(instruction, pairs, obs, turn) → text", "the default prompt: instruction, the last turns, the observation" },
  ["lt.envs.rollout"] = { "lt.envs.rollout(env, policy_fn[, opts]) → episode", "one episode of policy_fn(prompt, turn) → action in env" },
  ["lt.envs.rng"] = { "lt.envs.rng(seed) → rng", "seeded random numbers, the same on every host" },
  ["lt.envs.normalize_action"] = { "lt.envs.normalize_action(text) → text", "an action as the environments compare it" },
  ["lt.envs.options"] = { "lt.envs.options(fn, opts, defaults, bounds) → opts", "an environment's options checked against its defaults and bounds" },
}

return lt

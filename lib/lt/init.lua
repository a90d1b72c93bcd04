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
-- exp.study{...}`), that study on the command line (lt.study.define's main: --help, the args
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

require "lt.layers"  -- lt.layers.parse, lt.layers.spec: the block-selection grammar of every study
require "lt.tasks.eval"  -- lt.eval.run
lt.models = require "lt.models"  -- lt.models.get("tiny-qwen3"): the embedded default models
lt.envs = require "lt.envs"  -- lt.envs.get("sokoban"), lt.envs.rollout: text environments for agentic RL

return lt

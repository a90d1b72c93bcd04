-- lt/init.lua: the Lua half of the `lt` table. The C++ bindings fill `lt` first (tensors,
-- json, run store); this file adds what is simplest in Lua. Loaded once at start-up.
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

require "lt.eval"  -- lt.eval.run

return lt

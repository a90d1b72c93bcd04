-- tests/cli/spin_child.lua: a sweep's parent and its first child, the child spinning in calls
-- into C++ until a signal stops it; the file `ready` appears once it spins (after a logged
-- point). For tests/cli/run_signals.sh and rm_mark.sh.
lt.run.param("lr", "1e-3,1e-2")
lt.run.child("lr=1e-3", function()
  lt.run.log("loss", 1)
  lt.run.flush()
  local f = io.open("ready", "w"); f:write("1"); f:close()
  local x = lt.zeros(1)
  while true do x = x + 1 end
end)

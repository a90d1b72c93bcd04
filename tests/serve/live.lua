-- tests/serve/live.lua: a run that keeps logging `live` (5 points a second, flushed each time)
-- until it is stopped, for the live-update tests of `ltrun serve`; writes READY_FILE once its
-- first point is in the store. ltrun tests/serve/live.lua --ready=READY_FILE [--seconds=60]
local study = require "lt.study"
local cfg = study.args{ ready = "live_ready", seconds = 60 }
local t0, s = os.time(), 0
while os.time() - t0 < cfg.seconds do
  lt.run.log("live", s * 0.5, { step = s })
  lt.run.flush()
  if s == 0 then local f = io.open(cfg.ready, "w"); f:write(lt.run.id()); f:close() end
  s = s + 1
  io.popen("sleep 0.2"):close()  -- not os.execute: system() ignores SIGINT while it waits
end

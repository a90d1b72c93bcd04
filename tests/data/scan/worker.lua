-- tests/data/scan/worker.lua: a scan worker for tests/lua/scan_sched.lua. It records its
-- scan key, its job and OMP_NUM_THREADS, logs a score; --hang=true makes it wait (to be
-- killed mid-run), --fail=true raises an error.
local study = require "lt.study"
local cfg = study.args{ job = "", scan_key = "", hang = false, fail = false, ready = "" }
lt.run.param("threads", os.getenv("OMP_NUM_THREADS") or "")
lt.run.log("score", #cfg.job)
lt.run.flush()
if cfg.ready ~= "" then local f = assert(io.open(cfg.ready, "w")); f:write(cfg.job); f:close() end
if cfg.fail then error("worker " .. cfg.job .. " was told to fail") end
if cfg.hang then lt.proc.sleep(60) end

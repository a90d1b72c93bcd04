-- experiments/bench/capture.lua: what recording a run's sources and inputs costs (issue 26,
-- runtime/store/capture.h). A short study (this file with --role=study: several lib/lt
-- modules, a model loaded, a few forward passes, metrics logged) runs as a child process,
-- alternately with capture (the default) and without (LTRUN_CAPTURE=0), --trials times each;
-- logged: the median wall time of each, their ratio, and the time capture itself took inside
-- the process (LTRUN_CAPTURE_STATS), as a share of the study's wall time, with the model's
-- hashes cached (every run after the first) and cold (a fresh store each time).
local exp = require "lt.study"
local cfg = exp.args{ role = "bench", model = "", trials = 7, layers = 4, hidden = 256, passes = 20 }

if cfg.role == "study" then  -- the short study that is measured
  require "lt.report"; require "lt.report.svg"; require "lt.tasks.eval"; require "lt.tasks"
  local m = lt.model.load(cfg.model)
  local ids = lt.randint(0, m.config.vocab_size, { 64 }):totable()
  for i = 1, cfg.passes do
    local out = m:forward(ids, { logits = "last" })
    lt.run.log("logit_max", out.logits:max(), { step = i })
  end
  return
end

local path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = 4, kv_heads = 2,
                                      vocab = 4096, seed = 1 }
local script = debug.getinfo(1, "S").source:match("^@(.*)$")

-- one study run as a process: its wall seconds and the capture seconds it reported
local function study(db, capture)
  local log = os.tmpname()
  local t0 = lt.clock()
  local pid = lt.proc.spawn({ lt.proc.exe, "--db", db, script, "--role=study", "--model=" .. path,
                              "--passes=" .. cfg.passes },
                            { env = { LTRUN_CAPTURE = capture and "1" or "0", LTRUN_CAPTURE_STATS = "1" },
                              stdout = log, stderr = log })
  local status = lt.proc.wait(pid)
  local wall = lt.clock() - t0
  local f = io.open(log); local text = f:read("*a"); f:close(); os.remove(log)
  assert(status.code == 0, "the study failed:\n" .. text)
  local secs, hashed = text:match("ltrun capture: (%S+) s, (%d+) files hashed")
  assert(not capture or secs, "no capture figures from the study:\n" .. text)
  return wall, tonumber(secs or 0), tonumber(hashed or 0)
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

local db = os.tmpname()
study(db, true)  -- the first run hashes the model; the runs measured find its hashes cached
local on, off, inside, share, hashed = {}, {}, {}, {}, 0
for i = 1, cfg.trials do  -- interleaved, so that the machine's load falls on both alike
  local w_on, c, h = study(db, true)
  local w_off = study(db, false)
  on[i], off[i], inside[i], share[i] = w_on, w_off, c, c / w_on
  hashed = hashed + h
end
local cold, cold_share = {}, {}
for i = 1, 3 do
  local fresh = os.tmpname()
  local w, c = study(fresh, true)
  cold[i], cold_share[i] = c, c / w
  for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(fresh .. s) end
end
for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(db .. s) end
cleanup()

local m_on, m_off = median(on), median(off)
lt.run.log("study_wall_s_capture", m_on)
lt.run.log("study_wall_s_no_capture", m_off)
lt.run.log("wall_capture_vs_none", m_on / m_off)
lt.run.log("capture_s_cached", median(inside))
lt.run.log("capture_share_cached", median(share))
lt.run.log("capture_s_cold", median(cold))
lt.run.log("capture_share_cold", median(cold_share))
lt.run.log("files_hashed_when_cached", hashed)
print(("study wall, median of %d:   %.3f s with capture, %.3f s without (ratio %.3f)"):format(cfg.trials, m_on, m_off, m_on / m_off))
print(("capture inside the study:  %.4f s = %.2f%% of its wall (hashes cached; %d files hashed in %d runs)")
  :format(median(inside), 100 * median(share), hashed, cfg.trials))
print(("capture, cold hash cache:  %.4f s = %.2f%% of its wall"):format(median(cold), 100 * median(cold_share)))

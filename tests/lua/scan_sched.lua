-- tests/lua/scan_sched.lua: the layer-scan scheduler (lt.scan) with real worker processes:
-- each job a child run of this run; a worker killed mid-run leaves its run `crashed` and
-- the scan goes on and reports it; a failing worker is `failed`; --resume runs only the
-- jobs without an ok run; a job leased to a live process waits for it; workers die with the
-- process that started them; shards pick disjoint, covering, fixed subsets.
local T = require "lt.test"
local scan = require "lt.scan.workers"
local study = require "lt.study"
local worker = study.root .. "/tests/data/scan/worker.lua"
local tmp = (os.getenv("LTRUN_TEST_TMP") or "/tmp") .. "/scan_sched_" .. lt.proc.pid()
local me = lt.run.id()
local key = "key-" .. lt.proc.pid()

local function argv(opts)
  return function(job)
    local a = { worker, "--job=" .. job, "--scan_key=" .. key }
    for _, x in ipairs(opts[job] or {}) do a[#a + 1] = x end
    return a
  end
end
local function status_of(job)
  local r = lt.run.query("SELECT status FROM runs WHERE parent_id = ? AND name = ? ORDER BY id DESC LIMIT 1", me, job)
  return r[1] and r[1].status
end

T.case("shards: disjoint, covering, fixed; SLURM variables", function()
  local jobs = { "base", "full", "layer_0", "layer_1", "layer_2", "layer_3", "layer_4" }
  local seen = {}
  for i = 0, 2 do
    for _, j in ipairs(scan.shard_jobs(jobs, i, 3)) do
      T.ok(not seen[j], j .. " in two shards")
      seen[j] = i
    end
  end
  for _, j in ipairs(jobs) do T.ok(seen[j] ~= nil, j .. " in no shard") end
  T.same_table(scan.shard_jobs(jobs, 1, 3), { "full", "layer_2" })
  T.same_table({ scan.parse_shard("2/4") }, { 2, 4 })
  local env = { SLURM_ARRAY_TASK_ID = "5", SLURM_ARRAY_TASK_COUNT = "4", SLURM_ARRAY_TASK_MIN = "3" }
  T.same_table({ scan.parse_shard(nil, function(k) return env[k] end) }, { 2, 4 })
  T.eq(scan.parse_shard(nil, function() return nil end), nil)
  T.raises(function() scan.parse_shard("4/4") end, "0 <= i < n")
  T.raises(function() scan.parse_shard("a/b") end, "expected i/n")
  T.raises(function() scan.parse_devices("0,x") end, "GPU numbers")
  T.same_table(scan.parse_devices("0, 1"), { "0", "1" })
end)

T.case("a worker killed mid-run: its run crashed, the scan goes on and reports it", function()
  local ready = tmp .. "_ready"
  os.remove(ready)
  local res = scan.run{
    jobs = { "a", "victim", "bbb", "cc" }, workers = 2, key = key, quiet = true, log_dir = tmp .. "/logs",
    argv = argv{ victim = { "--hang=true", "--ready=" .. ready } },
    on_start = function(job, pid)
      if job ~= "victim" then return end
      for _ = 1, 600 do  -- wait until it has opened its run and logged, then kill it
        local f = io.open(ready)
        if f then f:close(); break end
        lt.proc.sleep(0.05)
      end
      T.ok(lt.proc.kill(pid, "KILL"), "victim was alive when killed")
    end,
  }
  T.eq(#res.results, 4)
  T.eq(#res.crashed, 1)
  T.eq(res.crashed[1].job, "victim")
  T.eq(res.crashed[1].signal, 9)
  T.eq(status_of("victim"), "crashed")
  for _, j in ipairs{ "a", "bbb", "cc" } do T.eq(status_of(j), "ok", j) end
  -- what the victim logged before it died is kept; its error says why it ended
  local v = lt.run.query("SELECT id, error FROM runs WHERE parent_id = ? AND name = 'victim'", me)[1]
  -- the scheduler names the signal (or a store opened meanwhile found the process gone first)
  T.ok(v.error:find("signal 9") or v.error:find("ended without closing"), v.error)
  T.eq(lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'score'", v.id)[1].value, 6)
  -- two workers on this machine's CPUs: each got half of them (at least one thread)
  local th = lt.run.query("SELECT value FROM params p JOIN runs r ON r.id = p.run_id WHERE r.name = 'a' AND p.key = 'threads'")
  T.eq(tonumber(th[1].value), math.max(1, math.floor(lt.proc.cpus() / 2)))
  T.ok(scan.report(res):find("crashed: victim"), scan.report(res))
  T.eq(scan.hash("a"), "e40c292c")
end)

T.case("resume runs only the jobs with no ok run; a failing worker is failed", function()
  local res = scan.run{ jobs = { "a", "victim", "bbb", "cc", "dddd" }, workers = 2, key = key, quiet = true,
                        resume = true, log_dir = tmp .. "/logs2", argv = argv{ dddd = { "--fail=true" } } }
  T.same_table(res.skipped, { "a", "bbb", "cc" })
  T.same_table(res.jobs, { "victim", "dddd" })
  T.eq(status_of("victim"), "ok")
  T.eq(#res.failed, 1)
  T.eq(res.failed[1].job, "dddd")
  T.eq(res.failed[1].code, 1)
  T.eq(status_of("dddd"), "failed")
  local err = T.read(res.failed[1].log .. ".err")
  T.ok(err:find("told to fail"), "the worker's stderr is in its log: " .. err)
  -- every job now has an ok run but dddd; a second resume runs dddd alone
  local again = scan.run{ jobs = { "a", "victim", "bbb", "cc", "dddd" }, workers = 1, key = key, quiet = true,
                          resume = true, log_dir = tmp .. "/logs3", argv = argv{} }
  T.same_table(again.jobs, { "dddd" })
  T.eq(status_of("dddd"), "ok")
  -- another scan key sees none of them as done
  T.eq(next(scan.done_jobs("other-key")), nil)
end)

T.case("a job leased to a live process is not started until that process has ended", function()
  local lkey = key .. "-lease"
  -- the holder: a process of ours that has the job `held` (as the worker of a scheduler that
  -- was killed would: alive, with its lease in the store)
  local holder = lt.proc.spawn({ "sleep", "120" })
  T.eq(lt.run.take_lease(lkey, "held", holder), nil, "a fresh lease is taken")
  local other = lt.run.take_lease(lkey, "held", lt.proc.pid())
  T.ok(other and other.pid == holder, "a live holder keeps it")
  local started, holder_alive_at, holder_reaped = {}, {}, false
  local res = scan.run{
    jobs = { "held", "free" }, workers = 2, key = lkey, quiet = true, log_dir = tmp .. "/logs5", argv = argv{},
    on_start = function(job)
      started[#started + 1] = job
      holder_alive_at[job] = not holder_reaped and lt.proc.wait(holder, 0) == nil
    end,
    on_end = function(r)
      if r.job == "free" then  -- only now does the holder go
        T.ok(lt.proc.kill(holder, "KILL"), "the holder was alive until `free` ended")
        lt.proc.wait(holder)
        holder_reaped = true
      end
    end,
  }
  T.same_table(started, { "free", "held" }, "held waited for its holder")
  T.eq(holder_alive_at.held, false, "held started only after its holder ended")
  T.eq(#res.results, 2)
  T.eq(status_of("held"), "ok")
  T.same_table(res.jobs, { "held", "free" })
  -- the scan's workers released their leases: a third process may take them now
  T.eq(lt.run.take_lease(lkey, "held", lt.proc.pid()), nil)
  lt.run.release_lease(lkey, "held", lt.proc.pid())
  T.eq(#lt.run.query("SELECT * FROM leases WHERE key = ?", lkey), 0)
end)

T.case("resume: a job whose holder ends with an ok run meanwhile is skipped, not run again", function()
  local lkey = key .. "-lease2"
  local holder = lt.proc.spawn({ "sleep", "120" })
  T.eq(lt.run.take_lease(lkey, "late", holder), nil)
  local res = scan.run{
    jobs = { "late", "first" }, workers = 1, key = lkey, quiet = true, resume = true, log_dir = tmp .. "/logs6",
    argv = argv{},
    on_end = function(r)
      if r.job == "first" then
        -- the holder's own ok run of `late` (as its worker would have left it), then it ends
        local c = lt.run.child("late", function() lt.run.param("scan_key", lkey) end)
        lt.proc.kill(holder, "KILL")
        lt.proc.wait(holder)
      end
    end,
  }
  T.same_table(res.jobs, { "first" })
  T.same_table(res.skipped, { "late" })
  T.eq(#lt.run.query("SELECT id FROM runs WHERE name = 'late' AND status = 'ok'"), 1, "late ran once")
end)

T.case("lt.proc.spawn death_signal: the child ends when the process that started it is killed", function()
  -- an ltrun that starts `sleep` with death_signal, writes its pid, then waits to be killed
  local pidfile = tmp .. "_sleeper"
  os.remove(pidfile)
  local mid = lt.proc.spawn({ lt.proc.exe, "--db", tmp .. "_mid.db", "-e", ([[
    local p = lt.proc.spawn({ "sleep", "300" }, { death_signal = "KILL" })
    local f = assert(io.open(%q, "w")); f:write(p); f:close()
    lt.proc.sleep(300)]]):format(pidfile) })
  local sleeper
  for _ = 1, 2400 do  -- up to 120 s on a loaded machine
    local f = io.open(pidfile)
    if f then sleeper = tonumber(f:read("*a")); f:close() end
    if sleeper then break end
    lt.proc.sleep(0.05)
  end
  T.ok(sleeper, "the middle process started its child")
  T.ok(lt.proc.kill(mid, "KILL"))
  lt.proc.wait(mid)
  local gone = false
  for _ = 1, 2400 do
    local f = io.open("/proc/" .. sleeper .. "/stat")
    local st = f and f:read("*l")
    if f then f:close() end
    if not st or st:match("^%d+ %b() ([ZX])") then gone = true; break end
    lt.proc.sleep(0.05)
  end
  T.ok(gone, "sleep " .. tostring(sleeper) .. " ended with its parent")
  if not gone then lt.proc.kill(sleeper, "KILL") end
  T.raises(function() lt.proc.spawn({ "no-such-program-ltrun" }, { death_signal = "TERM" }) end,
           "no%-such%-program%-ltrun")
  T.raises(function() lt.proc.spawn({ "sleep", "1" }, { death_signal = "NOPE" }) end, "unknown signal")
  T.raises(function() lt.proc.spawn({ "sleep", "1" }, { death_signal = "TERM", stdout = tmp .. "/no/such/dir/x" }) end,
           "opening its stdout file")
  -- a pid beyond pid_t is refused, not wrapped (2^32 would be 0: any child, our process group)
  T.raises(function() lt.proc.wait(2 ^ 32) end, "out of range")
end)

T.case("a shard runs its own subset only", function()
  local res = scan.run{ jobs = { "s0", "s1", "s2", "s3", "s4" }, workers = 2, key = key .. "-shard", quiet = true,
                        shard = "1/2", log_dir = tmp .. "/logs4", argv = argv{} }
  T.same_table(res.jobs, { "s1", "s3" })
  T.eq(res.shard, "1/2")
  T.eq(status_of("s1"), "ok")
  T.eq(status_of("s0"), nil)
end)

T.finish()

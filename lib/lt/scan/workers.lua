-- lt/scan/workers.lua: the scheduler of a scan's N + 1 trainings: one worker process per job
-- (`ltrun --parent-run SCAN --run-name JOB SCRIPT ARGS...`), so each job is a child run of the
-- scan with its own status, and a job that crashes (killed, out of memory) takes only its
-- own run down. K workers at once: on CPU they split the cores (OMP_NUM_THREADS), with
-- devices one job per device (`--device cuda:N`). Processes are started from argv arrays
-- (lt.proc.spawn), never through a shell.
--
--   local res = scan.run{ jobs = {"base", "full", "layer_0", ...},
--                         argv = function(job) return {script, "--job=" .. job, ...} end,
--                         workers = 2, devices = "0,1", key = KEY, resume = true,
--                         shard = "0/4", log_dir = "scan_logs" }
--
-- resume: jobs that already have an `ok` run carrying param scan_key = KEY are skipped.
-- Workers die with the scheduler (SIGTERM when it ends, however it ends: lt.proc.spawn's
-- death_signal), and with a key each job is leased in the store (lt.run.take_lease) to the
-- worker that runs it: a job whose lease a live process holds (the worker of an earlier
-- scheduler still winding down, or another scan of the same store) is not started; the scan
-- waits for that holder to end and then runs the job (skips it on resume when it ended ok).
-- shard "i/n" (0 <= i < n; or SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and
-- SLURM_ARRAY_TASK_COUNT when set): job number j (1-based, in the given order) belongs to
-- shard (j - 1) % n, so every shard of a job array picks a fixed, disjoint subset.
-- Returns {jobs = {names run here}, skipped = {names with an ok run}, results = {per job:
-- {job, run, status, code, signal, log}}, crashed = {...}, failed = {...}}; M.check(res)
-- raises an error naming the crashed and failed jobs.
local M = {}

local function fail(fmt, ...) error(fmt:format(...), 0) end

-- "i/n" or the SLURM array variables → i, n (nil when neither is given)
function M.parse_shard(spec, env)
  env = env or os.getenv
  if spec == nil or spec == "" or spec == false then
    local id, count = env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")
    if not (id and count) then return nil end
    local min = tonumber(env("SLURM_ARRAY_TASK_MIN") or "0")
    local i, n = tonumber(id), tonumber(count)
    if not (i and n and min) then
      fail("scan: SLURM_ARRAY_TASK_ID=%s / SLURM_ARRAY_TASK_COUNT=%s are not numbers", id, count)
    end
    spec = ("%d/%d"):format(i - min, n)
  end
  local i, n = tostring(spec):match("^(%d+)/(%d+)$")
  i, n = tonumber(i), tonumber(n)
  if not (i and n) or n < 1 or i >= n then
    fail("scan: shard '%s': expected i/n with 0 <= i < n (e.g. 0/4)", tostring(spec))
  end
  return i, n
end

-- A scan's jobs and their names, written and read here alone: base, full, layer (block `layer`
-- trained alone) and sweep (rate `sweep` of a learning-rate sweep). M.job{kind =, layer =,
-- sweep =} → the job's name (its run's name and lease); M.job_of(name) → {kind, layer, sweep}
-- (kind = the name for base and full), so that no study or task parses a name.
function M.job(j) return (j.layer or j.sweep) and ("%s_%d"):format(j.kind, j.layer or j.sweep) or j.kind end
function M.job_of(name)
  local kind, n = tostring(name):match("^(%a+)_(%d+)$")
  if kind == "layer" then return { kind = kind, layer = tonumber(n) } end
  if kind == "sweep" then return { kind = kind, sweep = tonumber(n) } end
  return { kind = tostring(name) }
end

-- The jobs of shard i of n: job j (1-based) when (j - 1) % n == i.
function M.shard_jobs(jobs, i, n)
  local out = {}
  for j, job in ipairs(jobs) do
    if (j - 1) % n == i then out[#out + 1] = job end
  end
  return out
end

-- "0,1,3" → {"0", "1", "3"}; nil/"" → nil
function M.parse_devices(spec)
  if spec == nil or spec == "" or spec == false then return nil end
  local out = {}
  for d in tostring(spec):gmatch("[^,]+") do
    d = d:match("^%s*(.-)%s*$")
    if not d:match("^%d+$") then fail("scan: --devices=%s: expected GPU numbers like 0,1", tostring(spec)) end
    out[#out + 1] = d
  end
  if #out == 0 then fail("scan: --devices=%s names no device", tostring(spec)) end
  return out
end

-- Names of the jobs that already have an `ok` run with param scan_key = key.
function M.done_jobs(key)
  local done = {}
  for _, r in ipairs(lt.run.query(
      "SELECT DISTINCT r.name FROM runs r JOIN params p ON p.run_id = r.id AND p.key = 'scan_key' " ..
      "WHERE p.value = ? AND r.status = 'ok'", key)) do
    done[r.name] = true
  end
  return done
end

-- the run store's file, for the workers' --db
local function db_path()
  for _, r in ipairs(lt.run.query("PRAGMA database_list")) do
    if r.name == "main" then return r.file end
  end
  fail("scan: cannot find the run store's file")
end

-- folders through lt.fs (no shell; a folder is removed only when ltrun made it)
function M.mkdir(path) lt.fs.mkdir(path) end
function M.remove_tree(path) lt.fs.remove(path) end
local mkdir = M.mkdir

-- FNV-1a (32 bits) of a string as 8 hex digits: a short, stable name for a configuration
function M.hash(s)
  local bit = require "bit"
  local h = 0x811c9dc5
  for i = 1, #s do
    h = bit.bxor(h, s:byte(i))
    -- h * 16777619 mod 2^32, in two halves so that doubles stay exact
    h = bit.tobit((bit.band(h, 0xffff) * 16777619) + bit.lshift(bit.band(bit.rshift(h, 16) * 16777619, 0xffff), 16))
  end
  return bit.tohex(h)
end

-- The worker's run (a child of `parent` named `job`, started by process `pid`), and its
-- status. A run a dead worker left `running` is marked `crashed` here.
local function settle(parent, job, pid, exit)
  local rows = lt.run.query("SELECT id, status FROM runs WHERE parent_id = ? AND name = ? AND pid = ? " ..
                            "ORDER BY id DESC LIMIT 1", parent, job, pid)
  local r = rows[1]
  if not r then  -- it ended before it opened its run: killed (crashed) or a usage error (failed)
    return nil, exit.signal ~= 0 and "crashed" or "failed"
  end
  if r.status == "running" then
    local why = exit.signal ~= 0 and ("worker process %d ended by signal %d"):format(pid, exit.signal)
                or ("worker process %d exited with code %d without closing its run"):format(pid, exit.code)
    lt.run.mark_crashed(r.id, why)
    return r.id, "crashed"
  end
  return r.id, r.status
end

function M.run(o)
  assert(type(o) == "table", "lt.scan.run: expected an options table")
  lt.check_options(o, "lt.scan.run", { "jobs", "argv", "devices", "device", "workers", "threads", "shard", "resume",
                                       "key", "log_dir", "quiet", "seed", "on_start", "on_end" })
  assert(type(o.jobs) == "table", "lt.scan.run: jobs = {names} is required")
  assert(type(o.argv) == "function", "lt.scan.run: argv = function(job) → script and its arguments is required")
  local devices = M.parse_devices(o.devices)
  local workers = devices and #devices or math.floor(tonumber(o.workers or 1) or 1)
  if workers < 1 then fail("scan: --workers=%s: expected at least 1", tostring(o.workers)) end
  local cpus = lt.proc.cpus()
  local threads = o.threads or math.max(1, math.floor(cpus / workers))

  local jobs = o.jobs
  local si, sn = M.parse_shard(o.shard)
  if si then jobs = M.shard_jobs(jobs, si, sn) end
  local skipped, todo = {}, {}
  local done = (o.resume and o.key) and M.done_jobs(o.key) or {}
  for _, job in ipairs(jobs) do
    if done[job] then skipped[#skipped + 1] = job else todo[#todo + 1] = job end
  end
  local planned = #todo

  local parent = lt.run.id()
  local me = lt.proc.pid()
  local db = db_path()
  local log_dir = o.log_dir or (db .. ".scan-logs/" .. math.floor(parent))
  mkdir(log_dir)
  local res = { jobs = todo, skipped = skipped, results = {}, crashed = {}, failed = {},
                shard = si and ("%d/%d"):format(si, sn) or nil, workers = workers, threads = threads }
  local say = o.quiet and function() end or function(fmt, ...) io.stderr:write(("scan: " .. fmt .. "\n"):format(...)) end
  if #skipped > 0 then say("%d job(s) already have an ok run, skipped: %s", #skipped, table.concat(skipped, ", ")) end

  local free = {}  -- worker slots (a device each, when devices are given)
  for w = workers, 1, -1 do free[#free + 1] = w end
  local running, finished = {}, 0
  local waiting, said = {}, {}  -- jobs not started yet (in order); holders already named
  -- every job gets the same seed: the scan's run seed (< 2^53: a double holds it exactly)
  local seed = o.seed or lt.run.seed()
  local t0 = lt.clock()

  local function start(job, slot)
    local argv = { lt.proc.exe, "--db", db, "--parent-run", tostring(math.floor(parent)), "--run-name", job,
                   "--seed", ("%.0f"):format(seed) }
    if devices then
      argv[#argv + 1] = "--device"
      argv[#argv + 1] = "cuda:" .. devices[slot]
    elseif o.device then
      argv[#argv + 1] = "--device"
      argv[#argv + 1] = o.device
    end
    for _, a in ipairs(o.argv(job)) do argv[#argv + 1] = a end
    local log = log_dir .. "/" .. job .. ".log"
    local env = devices and {} or { OMP_NUM_THREADS = threads, MKL_NUM_THREADS = threads }
    local ok_spawn, pid = pcall(lt.proc.spawn, argv, { env = env, stdout = log, stderr = log .. ".err",
                                                      death_signal = "TERM" })
    if not ok_spawn then
      if o.key then lt.run.release_lease(o.key, job, me) end
      error(pid, 0)
    end
    if o.key then lt.run.take_lease(o.key, job, pid) end  -- handed from this process to its worker
    running[pid] = { job = job, slot = slot, log = log, t = lt.clock() }
    if o.on_start then o.on_start(job, pid) end
  end

  -- the next job that may start now: the first waiting one whose lease this process could
  -- take (nil when none; a held job is asked again every half second); a job found done
  -- meanwhile (on resume) moves to `skipped`
  local recheck = {}
  local function next_startable()
    if not o.key then return table.remove(waiting, 1) end
    local now, i = lt.clock(), 1
    while i <= #waiting do
      local job = waiting[i]
      if (recheck[job] or -math.huge) <= now then
        local holder = lt.run.take_lease(o.key, job, me)
        if not holder then
          table.remove(waiting, i)
          if said[job] and o.resume and M.done_jobs(o.key)[job] then  -- its earlier worker ended ok
            lt.run.release_lease(o.key, job, me)
            skipped[#skipped + 1] = job
            say("%s: the process that held it ended and left an ok run; skipped", job)
          else
            return job
          end
        else
          recheck[job] = now + 0.5
          if not said[job] then
            said[job] = true
            say("%s is held by process %d on %s (scan run %s, since %s): waiting for it to end", job, holder.pid,
                holder.host, holder.holder_run and math.floor(holder.holder_run) or "?", holder.taken_at)
          end
          i = i + 1
        end
      else
        i = i + 1
      end
    end
    return nil
  end
  for _, job in ipairs(todo) do waiting[#waiting + 1] = job end

  local interrupted = false
  while #waiting > 0 or next(running) do
    while not interrupted and #free > 0 do
      local job = next_startable()
      if not job then break end
      start(job, table.remove(free))
    end
    local ended = false
    for pid, w in pairs(running) do
      local s = lt.proc.wait(pid, 0)
      if s then
        ended = true
        running[pid] = nil
        if o.key then lt.run.release_lease(o.key, w.job, pid) end
        free[#free + 1] = w.slot
        finished = finished + 1
        local run, status = settle(parent, w.job, pid, s)
        local r = { job = w.job, run = run, status = status, code = s.code, signal = s.signal, log = w.log,
                    wall_s = lt.clock() - w.t }
        res.results[#res.results + 1] = r
        if status == "crashed" then res.crashed[#res.crashed + 1] = r
        elseif status ~= "ok" then res.failed[#res.failed + 1] = r end
        say("%s %s (run %s, %.0f s)%s  [%d/%d]", w.job, status, run and math.floor(run) or "none", r.wall_s,
            s.signal ~= 0 and (" signal " .. s.signal) or (s.code ~= 0 and (" exit " .. s.code) or ""),
            finished, planned)
        if o.on_end then o.on_end(r) end
      end
    end
    if not ended and (next(running) or #waiting > 0) then
      if not lt.proc.sleep(next(running) and 0.05 or 0.5) or lt.interrupted() then
        if not interrupted then
          interrupted = true
          for pid in pairs(running) do lt.proc.kill(pid, "INT") end
        end
      end
      if interrupted and not next(running) then break end  -- (jobs still waiting are not started)
    end
  end
  -- the jobs run here (a job found done while it waited is in `skipped` instead)
  local ran, started = {}, {}
  for _, r in ipairs(res.results) do started[r.job] = true end
  for _, job in ipairs(todo) do if started[job] then ran[#ran + 1] = job end end
  res.jobs = ran
  res.wall_s = lt.clock() - t0
  if interrupted or lt.interrupted() then error("interrupted (Ctrl-C): the scan's workers were stopped", 0) end
  return res
end

-- Raises an error naming the jobs that crashed or failed (with their logs), so that the
-- scan's own run ends failed and its process exits non-zero; the jobs' runs stay as they are.
function M.check(res)
  local bad = {}
  for _, kind in ipairs{ "crashed", "failed" } do
    for _, r in ipairs(res[kind]) do
      bad[#bad + 1] = ("job %s %s (run %s%s; log %s)"):format(r.job, kind, r.run and math.floor(r.run) or "none",
        r.signal ~= 0 and (", signal " .. r.signal) or (r.code ~= 0 and (", exit " .. r.code) or ""), r.log)
    end
  end
  if #bad > 0 then
    error(("scan: %d of %d job(s) did not end ok: %s; the other jobs' runs are kept (run again with "
           .. "--resume=true to run only what is missing)"):format(#bad, #res.results, table.concat(bad, "; ")), 0)
  end
end

-- A one-line account of a finished scan, naming crashed and failed jobs.
function M.report(res)
  local parts = { ("%d job(s) run with %d worker(s) in %.0f s"):format(#res.jobs, res.workers, res.wall_s or 0) }
  if #res.skipped > 0 then parts[#parts + 1] = ("%d skipped (already ok)"):format(#res.skipped) end
  for _, kind in ipairs{ "crashed", "failed" } do
    if #res[kind] > 0 then
      local names = {}
      for _, r in ipairs(res[kind]) do names[#names + 1] = ("%s (log %s)"):format(r.job, r.log) end
      parts[#parts + 1] = ("%s: %s"):format(kind, table.concat(names, ", "))
    end
  end
  return table.concat(parts, "; ")
end

-- ---- the scan studies' scheduling (experiments/layer_scan/layer_scan.lua, layer_strategies.lua) -------------
-- args (study.study specs) of a study that runs its jobs as workers
M.args = {
  workers = { 2, "worker processes on CPU (the cores split among them)", int = true, min = 1 },
  devices = { "", "GPUs, one job at a time on each: 0,1 (\"\": CPU workers)" },
  resume = { false, "run only the jobs with no ok run of this scan key" },
  shard = { "", "i/n: run a fixed subset of the jobs into this DB (also from a SLURM job array)" },
  job = { "", "one job, run in a worker process (set by the scheduler)", internal = true },
  scan_key = { "", "the key that groups the jobs' runs (\"\": from the task, its settings and the seed)" },
}

-- Runs `jobs` as workers: each one this script again with --job=JOB --scan_key=KEY, the
-- script's other arguments and `extra` (later arguments win), logging into log_dir, with the
-- seed cfg.seed (nil: this run's); prints
-- the report and logs jobs_run / jobs_skipped / jobs_crashed / jobs_failed / scan_wall_s.
-- → lt.scan.run's result, for scan.check (which fails the run naming a crashed or failed job)
function M.launch(cfg, jobs, key, log_dir, extra)
  local pass, over = {}, {}
  for _, a in ipairs(extra or {}) do over[a:match("^%-%-([%w_]+)=") or a] = true end  -- extra wins over the same key
  for _, a in ipairs(arg or {}) do
    if not a:match("^%-%-job=") and not a:match("^%-%-scan_key=") and not a:match("^%-%-resume")
       and not over[a:match("^%-%-([%w_]+)=") or ""] then
      pass[#pass + 1] = a
    end
  end
  for _, a in ipairs(extra or {}) do pass[#pass + 1] = a end
  local res = M.run{ jobs = jobs, workers = cfg.workers, devices = cfg.devices, key = key, resume = cfg.resume,
                     shard = cfg.shard, log_dir = log_dir, seed = cfg.seed,
                     argv = function(job)
                       local a = { arg[0], "--job=" .. job, "--scan_key=" .. key }
                       for _, x in ipairs(pass) do a[#a + 1] = x end
                       return a
                     end }
  print("scan: " .. M.report(res))
  lt.run.log{ jobs_run = #res.jobs, jobs_skipped = #res.skipped, jobs_crashed = #res.crashed,
              jobs_failed = #res.failed, scan_wall_s = res.wall_s }
  return res
end

return M

-- tests/lua/dist.lua: `ltrun --device cpu launch` with 2 ranks on Gloo (child processes of this ltrun, with
-- a store of their own): lt.dist's collectives against values computed by hand, one run per
-- launch written by rank 0 with world_size and backend, and a rank killed with SIGKILL ending
-- the launch within 30 s with the run failed and the dead rank named. Issue 23: a hung rank
-- with --timeout 5 ends the launch well under 60 s, named; a single-node launch listens on no
-- interface but loopback.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_dist"
os.execute("rm -rf '" .. tmp .. "' && mkdir -p '" .. tmp .. "'")
local p = io.popen("readlink /proc/$PPID/exe")
local ltrun = p:read("*l")
p:close()

local function sh(cmd)
  local f = io.popen(cmd .. " 2>&1; echo \"rc=$?\"")
  local out = f:read("*a")
  f:close()
  return out, tonumber(out:match("rc=(%d+)%s*$"))
end
local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end
local function sql(db, q)
  local out = sh(("%q --db %q sql --csv %q"):format(ltrun, db, q))
  return out
end

T.case("single process: lt.dist is rank 0 of 1 and the collectives are the identity", function()
  T.eq(lt.dist.rank(), 0); T.eq(lt.dist.world_size(), 1); T.eq(lt.dist.is_main(), true)
  local t = lt.tensor{ 1, 2 }
  T.ok(lt.dist.all_reduce(t, "sum"):equal(lt.tensor{ 1, 2 }))
  T.eq(#lt.dist.all_gather(t), 1)
  T.raises(function() lt.dist.all_reduce(t, "prod") end, "expected sum, avg, max or min")
  T.raises(function() lt.dist.broadcast(t, 1) end, "source rank 1 outside 0..0")
end)

T.case("launch: 2 ranks, collectives, one run in the store", function()
  write(tmp .. "/coll.lua", [[
local r, w = lt.dist.rank(), lt.dist.world_size()
assert(w == 2, "world_size " .. w)
local t = lt.tensor{ r + 1, 10 * (r + 1) }
lt.dist.all_reduce(t, "sum")                       -- {1 + 2, 10 + 20}
assert(t:equal(lt.tensor{ 3, 30 }), tostring(t))
local m = lt.tensor{ r + 1.0 }
lt.dist.all_reduce(m, "max"); assert(m[0] == 2)
local a = lt.tensor{ r + 1.0 }
lt.dist.all_reduce(a, "avg"); assert(a[0] == 1.5)
local b = lt.tensor{ r == 0 and 7 or 0 }
lt.dist.broadcast(b, 0); assert(b[0] == 7)
local g = lt.dist.all_gather(lt.tensor{ r * 5 })
assert(#g == 2 and g[1][0] == 0 and g[2][0] == 5)
lt.dist.barrier()
lt.run.log("rank_seen", r)
print("RANK_OK " .. r)
]])
  local db = tmp .. "/coll.db"
  local out, rc = sh(("%q --db %q --device cpu launch --nproc-per-node 2 %q"):format(ltrun, db, tmp .. "/coll.lua"))
  T.eq(rc, 0, out)
  T.ok(out:find("RANK_OK 0") and out:find("RANK_OK 1"), out)
  local runs = sql(db, "select count(*) as n from runs")
  T.ok(runs:find("\n1%s*$") or runs:find("^n\n1"), "one run: " .. runs)
  local ws = sql(db, "select value from params where key = 'world_size'")
  T.ok(ws:find("2"), "world_size param: " .. ws)
  local seen = sql(db, "select value from metrics where name = 'rank_seen'")
  T.ok(seen:find("0") and not seen:find("1"), "only rank 0 logs: " .. seen)
end)

T.case("launch: lt.train.causal_lm's shard_optimizer and overlap_all_reduce train as replicated data parallel", function()
  lt.model.new{ out = tmp .. "/m", arch = "qwen3", layers = 2, hidden = 32, heads = 4, kv_heads = 2,
                vocab = 300, seed = 3 }
  write(tmp .. "/modes.lua", ([[
local rows = lt.randint(0, 300, { 8, 9 })  -- the launch gives both ranks one seed
local out = {}
for _, mode in ipairs{ "plain", "zero", "overlap" } do
  local m = lt.model.load(%q):train_only("all")
  local r = lt.train.causal_lm(m, { data = rows, steps = 3, lr = 1e-2, micro_batch = 2, log = false,
                                    progress = false, shard_optimizer = mode == "zero",
                                    overlap_all_reduce = mode == "overlap", bucket_bytes = 4096 })
  out[mode] = r
end
local p, z, o = out.plain, out.zero, out.overlap
for i = 1, 3 do
  -- 2 ranks: every averaged gradient element is one order-free sum, AdamW the same element-wise
  assert(math.abs(z.losses[i] - p.losses[i]) <= 1e-6 * p.losses[i], "zero loss " .. i)
  assert(math.abs(o.losses[i] - p.losses[i]) <= 1e-6 * p.losses[i], "overlap loss " .. i)
end
assert(o.bytes_all_reduced == p.bytes_all_reduced and p.bytes_all_reduced > 0)
-- ZeRO-1: this rank's moments are a share of the replicated ones; both shards add up to them
local shares = lt.dist.all_gather(lt.tensor{ z.optimizer_state_bytes })
assert(shares[1][0] + shares[2][0] == p.optimizer_state_bytes, "shards add up")
assert(z.optimizer_state_bytes < 0.6 * p.optimizer_state_bytes, "a share")
print("MODES_OK " .. lt.dist.rank())
]]):format(tmp .. "/m"))
  local out, rc = sh(("%q --db %q --device cpu launch --nproc-per-node 2 %q"):format(ltrun, tmp .. "/modes.db", tmp .. "/modes.lua"))
  T.eq(rc, 0, out)
  T.ok(out:find("MODES_OK 0") and out:find("MODES_OK 1"), out)
end)

T.case("launch: a rank killed with SIGKILL ends the launch, the run failed, the rank named", function()
  write(tmp .. "/kill.lua", [[
local r = lt.dist.rank()
for i = 1, 100000 do
  lt.dist.all_reduce(lt.tensor{ 1.0 }, "sum")
  if r == 1 and i == 20 then
    local s = io.open("/proc/self/stat"):read("*l")
    os.execute("kill -9 " .. s:match("^(%d+)"))
  end
end
]])
  local db = tmp .. "/kill.db"
  local t0 = os.time()
  local out, rc = sh(("%q --db %q --device cpu launch --nproc-per-node 2 %q"):format(ltrun, db, tmp .. "/kill.lua"))
  T.ok(os.time() - t0 < 30, "ended within 30 s")
  T.eq(rc, 137, out)
  T.ok(out:find("rank 1 %(pid %d+%) was killed by signal 9"), out)
  local st = sql(db, "select status, error from runs")
  T.ok(st:find("failed"), st)
  T.ok(st:find("rank 1"), "the run's error names rank 1: " .. st)
end)

T.case("launch: rank 0 killed with SIGKILL: rank 1 fails naming it, the launcher closes the run failed, its metrics kept", function()
  -- rank 0 logs 5 metrics, keeps all-reducing for 1.5 s (the store flushes at least every
  -- second), then kills itself; rank 1 is in an all_reduce when its peer goes
  write(tmp .. "/kill0.lua", [[
local r = lt.dist.rank()
if r == 0 then for i = 1, 5 do lt.run.log("before_kill", i * 10, i) end end
local wall0 = os.time()
for i = 1, 1000000 do
  lt.dist.all_reduce(lt.tensor{ 1.0 }, "sum")
  if r == 0 and i % 50 == 0 and os.time() - wall0 >= 2 then
    local s = io.open("/proc/self/stat"):read("*l")
    os.execute("kill -9 " .. s:match("^(%d+)"))
  end
end
]])
  local db = tmp .. "/kill0.db"
  local t0 = os.time()
  local out, rc = sh(("%q --db %q --device cpu launch --nproc-per-node 2 %q"):format(ltrun, db, tmp .. "/kill0.lua"))
  T.ok(os.time() - t0 < 30, "ended within 30 s")
  T.eq(rc, 137, out)
  T.ok(out:find("rank 0 %(pid %d+%) was killed by signal 9"), out)
  -- rank 1's failing collective quotes the launcher's note about rank 0
  T.ok(out:find("all_reduce on rank 1 of 2 failed %(timeout 300 s%): rank 0 %(pid %d+%) was killed"), out)
  local st = sql(db, "select status, error from runs where parent_id is null")
  T.ok(st:find("failed"), st)
  T.ok(st:find("rank 0 %(pid %d+%) was killed by signal 9"), "the run's error names rank 0: " .. st)
  local kept = sql(db, "select count(*) as n, sum(value) as s from metrics where name = 'before_kill'")
  T.ok(kept:find("5,150"), "the 5 metrics logged before the kill are kept: " .. kept)
end)

T.case("launch --timeout: a hung rank ends the launch well under 60 s, named by the rank that waited", function()
  -- rank 1 stops taking part after one all_reduce (it loops on a C++ call, so SIGTERM reaches it)
  write(tmp .. "/hang.lua", [[
lt.dist.all_reduce(lt.tensor{ 1.0 }, "sum")
if lt.dist.rank() == 1 then
  local t0 = lt.clock()
  while lt.clock() - t0 < 600 do end
end
lt.dist.all_reduce(lt.tensor{ 1.0 }, "sum")
]])
  local db = tmp .. "/hang.db"
  local t0 = os.time()
  local out, rc = sh(("%q --db %q --device cpu launch --timeout=5 --nproc-per-node 2 %q"):format(ltrun, db, tmp .. "/hang.lua"))
  local took = os.time() - t0
  T.ok(took < 60, ("ended within 60 s (took %d s)"):format(took))
  T.ok(rc ~= 0, out)
  -- the rendezvous is collective 1, the first all_reduce 2: rank 1 never entered the second
  T.ok(out:find("all_reduce on rank 0 of 2 failed %(timeout 5 s%): rank 1 did not reach it %(rank 1 entered 2 collectives, rank 0 3, counting the rendezvous%)"),
       out)
  local st = sql(db, "select status, error from runs")
  T.ok(st:find("failed") and st:find("rank 1 did not reach it"), "the run's error names rank 1: " .. st)
  local bad = sh(("%q --device cpu launch --timeout=0 --nproc-per-node 2 %q"):format(ltrun, tmp .. "/hang.lua"))
  T.ok(bad:find("launch: %-%-timeout 0: expected seconds in"), bad)
end)

T.case("launch: a single-node job listens on no interface but loopback", function()
  -- each rank lists its own listening TCP sockets (from /proc/net/tcp{,6} by socket inode)
  -- while both are in the group; rank 0's rendezvous port used to listen on every interface
  write(tmp .. "/listen.lua", [[
lt.dist.barrier()
local p = io.popen("for f in /proc/$PPID/fd/*; do readlink $f; done 2>/dev/null")
local mine = {}
for l in p:lines() do local i = l:match("^socket:%[(%d+)%]$"); if i then mine[i] = true end end
p:close()
local n = 0
for _, file in ipairs{ "/proc/net/tcp", "/proc/net/tcp6" } do
  for line in io.lines(file) do
    local addr, st, inode = line:match("^%s*%d+: (%x+):%x+ %x+:%x+ (%x+) %x+:%x+ %x+:%x+ %x+%s+%d+%s+%d+%s+(%d+)")
    if st == "0A" and mine[inode] then
      n = n + 1
      local loop = addr == "0100007F" or addr == "00000000000000000000000001000000" or addr == "0000000000000000FFFF00000100007F"
      print(("LISTEN rank %d %s %s"):format(lt.dist.rank(), addr, loop and "loopback" or "NOT-LOOPBACK"))
    end
  end
end
print(("LISTEN_DONE rank %d %d"):format(lt.dist.rank(), n))
lt.dist.barrier()
]])
  local out, rc = sh(("%q --db %q --device cpu launch --nproc-per-node 2 %q"):format(ltrun, tmp .. "/listen.db", tmp .. "/listen.lua"))
  T.eq(rc, 0, out)
  T.ok(out:find("LISTEN_DONE rank 0") and out:find("LISTEN_DONE rank 1"), out)
  T.ok(not out:find("NOT%-LOOPBACK"), "every listening socket of the ranks is on loopback: " .. out)
end)

T.finish()

-- tests/lua/run.lua: lt.run from Lua, checked by reading the store back with SQL.
local T = require "lt.test"
local q = lt.run.query
local me = lt.run.id()

T.case("params, metrics with steps, tensors as values", function()
  lt.run.param("lr", 3e-5)
  lt.run.param{ model = "tiny", layers = 4, betas = {0.9, 0.95} }
  lt.run.log("loss", 2.0)
  lt.run.log("loss", lt.tensor{1.5})
  lt.run.log("loss", 1.0, { step = 10 })
  lt.run.log({ acc = 0.5, ppl = 3 }, { step = 2 })
  local p = q("SELECT key, value FROM params WHERE run_id = ? ORDER BY key", me)
  T.same_table(p, {{key = "betas", value = "[0.9,0.95]"}, {key = "layers", value = "4"},
                   {key = "lr", value = "3e-05"}, {key = "model", value = "tiny"}})
  local m = q("SELECT step, value FROM metrics WHERE run_id = ? AND name = 'loss' ORDER BY step", me)
  T.same_table(m, {{step = 0, value = 2}, {step = 1, value = 1.5}, {step = 10, value = 1}})
  T.eq(q("SELECT value FROM metrics WHERE name = 'ppl'")[1].value, 3)
  T.raises(function() lt.run.log("x", lt.zeros(3)) end, "one number")
  T.raises(function() lt.run.log("x", "high") end, "number")
end)

T.case("log_layers: array index i is layer i-1; tensors index from 0; grp and first", function()
  lt.run.log_layers("js", {0.1, 0.2, 0.3}, { grp = "g1" })
  lt.run.log_layers("p_target", lt.tensor{0.5, 0.6}, { grp = 2, first = 1 })
  local r = q("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'js' ORDER BY layer", me)
  T.same_table(r, {{layer = 0, value = 0.1}, {layer = 1, value = 0.2}, {layer = 2, value = 0.3}})
  local r2 = q("SELECT layer, grp FROM layer_metrics WHERE name = 'p_target' ORDER BY layer")
  T.same_table(r2, {{layer = 1, grp = "2"}, {layer = 2, grp = "2"}})
end)

T.case("child runs: own status, results returned, errors marked and re-raised", function()
  local v = lt.run.child("ok_child", function(a, b)
    lt.run.log("inner", 1)
    T.ok(lt.run.id() ~= me, "inside a child, lt.run.id() is the child")
    return a + b
  end, 2, 3)
  T.eq(v, 5)
  T.eq(lt.run.id(), me)
  local err = T.raises(function()
    lt.run.child("bad_child", function()
      lt.run.log("before_failure", 42)
      error("diverged at step 7")
    end)
  end, "diverged at step 7")
  local kids = q("SELECT name, status, error FROM runs WHERE parent_id = ? ORDER BY id", me)
  T.eq(#kids, 2)
  T.eq(kids[1].status, "ok"); T.eq(kids[2].status, "failed")
  T.ok(kids[2].error:find("diverged at step 7"), "error text stored")
  T.ok(kids[2].error:find("stack traceback"), "with its traceback")
  T.eq(q("SELECT count(*) AS n FROM metrics WHERE name = 'before_failure'")[1].n, 1)
  -- nested children
  lt.run.child("outer", function()
    lt.run.child("inner", function() end)
  end)
  local inner = q("SELECT r.name AS name, p.name AS parent FROM runs r JOIN runs p ON p.id = r.parent_id WHERE r.name = 'inner'")
  T.eq(inner[1].parent, "outer")
end)

T.case("artifacts record path and sha256", function()
  local path = os.getenv("LTRUN_TEST_TMP") .. "/artifact.txt"
  local f = assert(io.open(path, "w")); f:write("abc"); f:close()
  lt.run.artifact(path)
  local a = q("SELECT kind, path, sha256 FROM artifacts WHERE run_id = ?", me)[1]
  T.eq(a.kind, "txt")
  T.eq(a.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  T.raises(function() lt.run.artifact("/nonexistent/file.svg") end, "does not exist")
end)

T.case("query: named queries from db/queries with ? parameters; an unknown name is an error naming it", function()
  lt.run.log("named_q", 7, { step = 3 })
  local rows = q("@run_metrics", me)
  local found = false
  for _, r in ipairs(rows) do
    T.eq(r.run_id, me)
    if r.name == "named_q" then found = true; T.eq(r.step, 3); T.eq(r.value, 7) end
  end
  T.ok(found, "@run_metrics has this run's metric")
  local st = {}  -- the same file `ltrun sql @status` runs
  for _, r in ipairs(q("@status")) do st[r.status] = r.runs end
  T.ok(st.running and st.running >= 1, "@status counts this running run")
  T.raises(function() q("@no_such_query") end, "lt%.run%.query: no named query @no_such_query %(known: .*run_metrics")
  T.raises(function() q("@../etc") end, "bad query name '%.%./etc'")
  -- a long or odd name is refused and shown cut, not echoed whole (twice) in the error
  local err = T.raises(function() q("@" .. string.rep("a", 5000)) end, "bad query name 'a+%.%.%.' %(a name of db/queries")
  T.ok(#tostring(err) < 400, "the error is short")
  T.raises(function() q("@a b") end, "bad query name 'a b'")
end)

T.case("seed: the run's seed and its named streams", function()
  T.eq(lt.run.seed(), 20261125)  -- CTest's --seed
  T.eq(lt.seed, nil)             -- no global to read back
  local a, b = lt.run.seed("data.windows"), lt.run.seed("train.order")
  T.ok(a ~= b, "two streams differ")
  T.eq(lt.run.seed("data.windows"), a)  -- and repeat
  T.ok(a >= 0 and a < 2 ^ 53 and a == math.floor(a), "an integer a double holds exactly")
  -- pinned against an independent computation (Python, from the published splitmix64 and
  -- FNV-1a constants): splitmix64(splitmix64(20261125) ^ fnv1a("eval")) mod 2^53
  T.eq(lt.run.seed("eval"), 7907403396762285)
  T.raises(function() lt.run.seed(3) end, "lt%.run%.seed: argument 1: expected a string")
  -- the default seed of a seeded function is its stream: equal to passing it explicitly
  local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_run_seed"
  os.execute("rm -rf '" .. tmp .. "'")
  local jf = assert(io.open(tmp .. ".jsonl", "w"))
  for i = 1, 30 do jf:write(('{"question": "q%d", "answer": "%d"}\n'):format(i, i)) end
  jf:close()
  local function qs(items) local t = {} for i, it in ipairs(items) do t[i] = it.question end return table.concat(t, ",") end
  T.eq(qs(lt.rl.prompts(tmp .. ".jsonl", { n = 5 })), qs(lt.rl.prompts(tmp .. ".jsonl", { n = 5, seed = lt.run.seed("rl.prompts") })))
  T.ok(qs(lt.rl.prompts(tmp .. ".jsonl", { n = 5 })) ~= qs(lt.rl.prompts(tmp .. ".jsonl", { n = 5, seed = 1 })), "seed = overrides")
  T.raises(function() lt.rl.prompts(tmp .. ".jsonl", { n = 5, seed = -1 }) end, "lt%.rl%.prompts: option seed: %-1 is out of range")
end)

T.case("the root run describes this script", function()
  local r = q("SELECT name, status, script_sha256, length(script_text) AS n, device FROM runs WHERE id = ?", me)[1]
  T.eq(r.name, "run"); T.eq(r.status, "running"); T.eq(r.device, lt.device)  -- the session device (cuda:0 on a GPU node)
  T.ok(r.n > 1000, "script text stored")
  T.eq(#r.script_sha256, 64)
end)

T.finish()

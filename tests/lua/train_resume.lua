-- tests/lua/train_resume.lua: a training run killed with SIGKILL right after a checkpoint and
-- resumed by a second process leaves no hole in the loss curve (the checkpoint flushes the
-- buffered metrics before it is published); resume = true with no checkpoint is an error. Both runs are child processes of this ltrun,
-- writing to a store of their own.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_train_resume"
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

lt.model.new{ out = tmp .. "/m", layers = 2, hidden = 32, heads = 4, kv_heads = 2, vocab = 300, seed = 1 }
local f = assert(io.open(tmp .. "/corpus.txt", "w"))
for i = 1, 80 do f:write(("the cat number %d sat on the mat\n%%\n"):format(i)) end
f:close()
lt.data.pack{ tokenizer = tmp .. "/m", inputs = { tmp .. "/corpus.txt" }, out = tmp .. "/packed",
              val = 0.1, seed = 3, progress = false }

-- the study: 12 steps, a checkpoint every 3; with --kill=N it SIGKILLs itself after step N
local script = tmp .. "/study.lua"
f = assert(io.open(script, "w"))
f:write([[
local exp = require "lt.experiment"
local cfg = exp.args{ dir = "", kill = 0, resume = false }
local m = lt.model.load(cfg.dir .. "/m"):train_only("all")
local function pid()
  local s = io.open("/proc/self/stat"):read("*l")  -- read by this ltrun process itself
  return s:match("^(%d+)")
end
lt.train.causal_lm(m, { data = cfg.dir .. "/packed", seq_len = 8, steps = 12, micro_batch = 2,
  lr = 1e-3, checkpoint_dir = cfg.dir .. "/ck", checkpoint_every = 3, resume = cfg.resume,
  progress = false, on_step = function(step)
    if step == cfg.kill then os.execute("kill -9 " .. pid()) end
  end })
]])
f:close()

T.case("kill -9 after a checkpoint, then resume: every step's loss is in the store", function()
  local db = tmp .. "/runs.db"
  local out, rc = sh(("%q --db %q --seed 5 %q --dir=%q --kill=7"):format(ltrun, db, script, tmp))
  T.eq(rc, 137, "killed: " .. out)
  T.ok(lt.train.latest_checkpoint(tmp .. "/ck"):find("step%-00000006"), "checkpoint of step 6")
  out, rc = sh(("%q --db %q %q --dir=%q --resume=true"):format(ltrun, db, script, tmp))
  T.eq(rc, 0, out)
  local q = io.popen(("%q --db %q sql --csv %q"):format(ltrun, db,
    "select distinct step from metrics where name = 'loss' order by step"))
  local steps = {}
  for line in q:lines() do
    local s = tonumber(line)
    if s then steps[#steps + 1] = s end
  end
  q:close()
  local want = {}
  for i = 1, 12 do want[i] = i end
  T.same_table(steps, want, "loss steps over both runs")
end)

T.case("resume = true with no checkpoint in the folder is an error naming it, not a fresh start", function()
  local m = lt.model.load(tmp .. "/m"):train_only("all")
  local before = m:parameters()["model.norm.weight"]:clone()
  local empty = tmp .. "/no_ck"
  for _, o in ipairs{ { data = tmp .. "/packed", seq_len = 8, steps = 2, micro_batch = 2, progress = false } } do
    o.checkpoint_dir, o.resume = empty, true
    T.raises(function() lt.train.causal_lm(m, o) end, "no checkpoint in " .. empty:gsub("%p", "%%%0"))
  end
  T.ok(m:parameters()["model.norm.weight"]:equal(before), "no step was trained")
  T.eq(lt.train.latest_checkpoint(empty), nil, "and no checkpoint written")
  -- lt.rl.grpo runs on the same loop
  local items = { { question = "1 + 1?", answer = "2" }, { question = "2 + 1?", answer = "3" } }
  T.raises(function()
    lt.rl.grpo(m, { data = items, prompts = 2, group_size = 2, max_response = 4, iterations = 1, log = false,
                    progress = false, checkpoint_dir = empty, resume = true })
  end, "no checkpoint in " .. empty:gsub("%p", "%%%0"))
end)

T.finish()

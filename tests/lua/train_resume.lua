-- tests/lua/train_resume.lua: a training run killed with SIGKILL right after a checkpoint and
-- resumed by a second process leaves no hole in the loss curve (the checkpoint flushes the
-- buffered metrics before it is published); resume = true with no checkpoint is an error; a
-- checkpoint's manifest names a damaged file at resume (issue 34). Both runs are child processes of this ltrun,
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
local study = require "lt.study"
local cfg = study.args{ dir = "", kill = 0, resume = false }
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

T.case("a checkpoint carries a manifest; a damaged file is named at resume, an intact one resumes", function()
  local dir = tmp .. "/ck_manifest"
  local function opts(o)
    local t = { data = tmp .. "/packed", seq_len = 8, steps = 4, micro_batch = 2, lr = 1e-3, progress = false,
                checkpoint_dir = dir, checkpoint_every = 2, seed = 9, log = false }
    for k, v in pairs(o or {}) do t[k] = v end
    return t
  end
  local function model() return lt.model.load(tmp .. "/m"):train_only("all") end
  lt.train.causal_lm(model(), opts{ stop_after = 2 })
  local ck = lt.train.latest_checkpoint(dir)
  T.ok(ck:find("step%-00000002"), ck)
  local mf = assert(io.open(ck .. "/manifest.json")):read("*a")
  local man = lt.json.decode(mf)
  T.eq(man.format, 1)
  for _, name in ipairs{ "model.safetensors", "optimizer.safetensors", "trainer_state.json", "config.json" } do
    local e = man.files[name]
    T.ok(e ~= nil, "the manifest lists " .. name)
    -- checked against the file, independently of ltrun's own hashing: sha256sum and its size
    local p = io.popen(("sha256sum %q"):format(ck .. "/" .. name))
    T.eq(p:read("*l"):match("^(%x+)"), e.sha256, name .. ": sha256")
    p:close()
    local f = assert(io.open(ck .. "/" .. name, "rb"))
    T.eq(f:seek("end"), e.bytes, name .. ": bytes")
    f:close()
  end
  T.eq(man.files["manifest.json"], nil, "not itself")

  -- 64 flipped bytes in the middle of the optimizer's tensors: refused, naming the file
  local path = ck .. "/optimizer.safetensors"
  local f = assert(io.open(path, "r+b"))
  local size = f:seek("end")
  local at = math.floor(size / 2)
  f:seek("set", at)
  local orig = f:read(64)
  local flipped = orig:gsub(".", function(c) return string.char(255 - c:byte()) end)
  f:seek("set", at)
  f:write(flipped)
  f:close()
  local m = model()
  local before = m:parameters()["model.norm.weight"]:clone()
  T.raises(function() lt.train.causal_lm(m, opts{ resume = true }) end,
           "resume: checkpoint " .. ck:gsub("%p", "%%%0") .. " is damaged: optimizer%.safetensors has sha256 %x+, "
           .. "the manifest says " .. man.files["optimizer.safetensors"].sha256)
  T.ok(m:parameters()["model.norm.weight"]:equal(before), "nothing was loaded or trained")
  -- a truncated file: its size
  f = assert(io.open(path, "r+b"))
  f:seek("set", at)
  f:write(orig)
  f:close()
  local cfg = assert(io.open(ck .. "/config.json", "rb")):read("*a")
  f = assert(io.open(ck .. "/config.json", "wb"))
  f:write(cfg:sub(1, -2))
  f:close()
  T.raises(function() lt.train.causal_lm(model(), opts{ resume = true }) end,
           "is damaged: config%.json has " .. (#cfg - 1) .. " bytes, the manifest says " .. #cfg)
  f = assert(io.open(ck .. "/config.json", "wb"))
  f:write(cfg)
  f:close()
  -- restored: it resumes from step 2 and ends at step 4
  local r = lt.train.causal_lm(model(), opts{ resume = true })
  T.eq(r.start_step, 2)
  T.ok(lt.train.latest_checkpoint(dir):find("step%-00000004"))

  -- a checkpoint from before manifests: resumes, with a note that it was not verified
  os.remove(lt.train.latest_checkpoint(dir) .. "/manifest.json")
  local script = tmp .. "/resume_old.lua"
  f = assert(io.open(script, "w"))
  f:write(([[
local m = lt.model.load(%q):train_only("all")
local r = lt.train.causal_lm(m, { data = %q, seq_len = 8, steps = 6, micro_batch = 2, lr = 1e-3, progress = false,
                                  checkpoint_dir = %q, checkpoint_every = 2, resume = true })
print("resumed at " .. r.start_step)
]]):format(tmp .. "/m", tmp .. "/packed", dir))
  f:close()
  local out, rc = sh(("%q --db %q %q"):format(ltrun, tmp .. "/old.db", script))
  T.eq(rc, 0, out)
  T.ok(out:find("resume: note: " .. dir .. "/step-00000004 has no manifest.json (written before checkpoints carried one): "
                .. "its files are not verified", 1, true), out)
  T.ok(out:find("resumed at 4", 1, true), out)
end)

T.finish()

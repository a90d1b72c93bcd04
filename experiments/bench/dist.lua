-- experiments/bench/dist.lua: data-parallel training throughput on this machine's CPUs
-- (Gloo): tokens/s of 1 process against 2 ranks (`ltrun launch --nproc-per-node 2`) at the
-- same global batch, as a ratio measured in the same run, for full training and for a
-- half-frozen plan (whose gradient all-reduce is about half: bytes counted by the loop).
-- Run as `ltrun experiments/bench/dist.lua`; it launches its own 2-rank half.
local exp = require "lt.experiment"
local cfg = exp.args{ layers = 4, hidden = 256, heads = 8, kv_heads = 4, seq_len = 128,
                      global_batch = 8, steps = 6, plan = "", model = "" }

local function train(m, micro)
  local rows = lt.randint(0, m.config.vocab_size, { 64, cfg.seq_len + 1 })  -- same --seed: same rows
  return lt.train.causal_lm(m, { data = rows, steps = cfg.steps, lr = 1e-4, micro_batch = micro,
                                 log = false, progress = false })
end

local function plan(m, name)
  if name == "half" then m:freeze{ lt.layers.shallow(m, 0.5), "embeddings" } else m:train_only("all") end
  return m
end

if lt.dist.world_size() > 1 then  -- a rank of the launched half
  local m = plan(lt.model.load(cfg.model), cfg.plan)
  local r = train(m, math.floor(cfg.global_batch / lt.dist.world_size()))
  if lt.dist.is_main() then
    print(("RESULT tokens_per_s=%.6g bytes=%d"):format(r.tokens_per_s, lt.dist.bytes_all_reduced()))
  end
  return
end

local path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                                      kv_heads = cfg.kv_heads, vocab = 2048, seed = 1 }
local p = io.popen("readlink /proc/$PPID/exe")
local ltrun = p:read("*l")
p:close()
local script = debug.getinfo(1, "S").source:match("^@(.*)$")
local db = os.tmpname()  -- the launched runs' store (this run logs the comparison)
for _, name in ipairs{ "full", "half" } do
  local one = train(plan(lt.model.load(path), name), cfg.global_batch)
  local f = io.popen(("%q --db %q --seed %d launch --nproc-per-node 2 %q --plan=%s --model=%q " ..
                      "--layers=%d --hidden=%d --seq_len=%d --global_batch=%d --steps=%d 2>&1"):format(
                      ltrun, db, lt.seed, script, name, path, cfg.layers, cfg.hidden, cfg.seq_len,
                      cfg.global_batch, cfg.steps))
  local out = f:read("*a")
  f:close()
  local tps, bytes = out:match("RESULT tokens_per_s=(%S+) bytes=(%d+)")
  assert(tps, "the 2-rank launch printed no result:\n" .. out)
  tps, bytes = tonumber(tps), tonumber(bytes)
  print(("%-5s 1 process %8.0f tok/s   2 ranks %8.0f tok/s   ratio %.2f   all-reduced %.1f MB"):format(
    name, one.tokens_per_s, tps, tps / one.tokens_per_s, bytes / 1e6))
  lt.run.log("tokens_per_s_1." .. name, one.tokens_per_s)
  lt.run.log("tokens_per_s_2." .. name, tps)
  lt.run.log("ratio_2_over_1." .. name, tps / one.tokens_per_s)
  lt.run.log("bytes_all_reduced." .. name, bytes)
end
cleanup()
os.remove(db)

-- experiments/bench/dist.lua: data-parallel training throughput on this machine's CPUs
-- (Gloo): tokens/s of 1 process against 2 ranks (`ltrun launch --nproc-per-node 2`) at the
-- same global batch, as a ratio measured in the same run, for full training and for a
-- half-frozen plan (whose gradient all-reduce is about half: bytes counted by the loop).
-- For the full plan also: ZeRO-1 (shard_optimizer), its optimizer-state bytes per rank against
-- replicated data parallel's, and the all-reduce overlapped with backward (overlap_all_reduce),
-- its tokens/s against the plain 2-rank run (both with buckets of --bucket_kb).
-- Run as `ltrun experiments/bench/dist.lua`; it launches its own 2-rank half.
local exp = require "lt.study"
local cfg = exp.args{ layers = 4, hidden = 256, heads = 8, kv_heads = 4, seq_len = 128,
                      global_batch = 8, steps = 6, plan = "", model = "", mode = "plain",
                      bucket_kb = 1024 }

local function train(m, micro, mode)
  local rows = lt.randint(0, m.config.vocab_size, { 64, cfg.seq_len + 1 })  -- same --seed: same rows
  return lt.train.causal_lm(m, { data = rows, steps = cfg.steps, lr = 1e-4, micro_batch = micro,
                                 log = false, progress = false, shard_optimizer = mode == "zero",
                                 overlap_all_reduce = mode == "overlap",
                                 bucket_bytes = cfg.bucket_kb * 1024 })
end

local function plan(m, name)
  if name == "half" then m:freeze{ lt.layers.shallow(m, 0.5), "embeddings" } else m:train_only("all") end
  return m
end

if lt.dist.world_size() > 1 then  -- a rank of the launched half
  local m = plan(lt.model.load(cfg.model), cfg.plan)
  local r = train(m, math.floor(cfg.global_batch / lt.dist.world_size()), cfg.mode)
  -- the largest optimizer state of any rank
  local state = lt.dist.all_reduce(lt.tensor{ r.optimizer_state_bytes }, "max")[0]
  if lt.dist.is_main() then
    print(("RESULT tokens_per_s=%.6g bytes=%.0f state=%.0f"):format(r.tokens_per_s, r.bytes_all_reduced, state))
  end
  return
end

local path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                                      kv_heads = cfg.kv_heads, vocab = 2048, seed = 1 }
local script = debug.getinfo(1, "S").source:match("^@(.*)$")
local db = os.tmpname()  -- the launched runs' store (this run logs the comparison)
local function launch(name, mode)  -- lt.proc: an argv array, no shell
  local log = os.tmpname()
  local pid = lt.proc.spawn({ lt.proc.exe, "--db", db, "--seed", ("%.0f"):format(lt.run.seed()), "launch", "--nproc-per-node", "2",
                              script, "--plan=" .. name, "--model=" .. path, "--layers=" .. cfg.layers,
                              "--hidden=" .. cfg.hidden, "--seq_len=" .. cfg.seq_len,
                              "--global_batch=" .. cfg.global_batch, "--steps=" .. cfg.steps, "--mode=" .. mode,
                              "--bucket_kb=" .. cfg.bucket_kb }, { stdout = log, stderr = log .. ".err" })
  lt.proc.wait(pid)
  local out = ""
  for _, file in ipairs{ log, log .. ".err" } do
    local f = io.open(file)
    if f then out = out .. f:read("*a"); f:close() end
    os.remove(file)
  end
  local tps, bytes, state = out:match("RESULT tokens_per_s=(%S+) bytes=(%d+) state=(%d+)")
  assert(tps, "the 2-rank launch printed no result:\n" .. out)
  return tonumber(tps), tonumber(bytes), tonumber(state)
end
local plain_full
for _, name in ipairs{ "full", "half" } do
  local one = train(plan(lt.model.load(path), name), cfg.global_batch)
  local tps, bytes, state = launch(name, "plain")
  if name == "full" then plain_full = { tps = tps, state = state } end
  print(("%-5s 1 process %8.0f tok/s   2 ranks %8.0f tok/s   ratio %.2f   all-reduced %.1f MB"):format(
    name, one.tokens_per_s, tps, tps / one.tokens_per_s, bytes / 1e6))
  lt.run.log("tokens_per_s_1." .. name, one.tokens_per_s)
  lt.run.log("tokens_per_s_2." .. name, tps)
  lt.run.log("ratio_2_over_1." .. name, tps / one.tokens_per_s)
  lt.run.log("bytes_all_reduced." .. name, bytes)
end
-- ZeRO-1: the largest per-rank optimizer state against replicated; its speed
local ztps, _, zstate = launch("full", "zero")
print(("ZeRO-1 optimizer state per rank %.1f MB vs replicated %.1f MB: ratio %.3f   tok/s ratio %.2f"):format(
  zstate / 1e6, plain_full.state / 1e6, zstate / plain_full.state, ztps / plain_full.tps))
lt.run.log("zero1_state_ratio", zstate / plain_full.state)
lt.run.log("zero1_tokens_per_s_ratio", ztps / plain_full.tps)
-- all-reduce overlapped with backward against after backward (same buckets)
local otps = launch("full", "overlap")
print(("overlap_all_reduce %8.0f tok/s vs %8.0f tok/s after backward: ratio %.2f"):format(
  otps, plain_full.tps, otps / plain_full.tps))
lt.run.log("overlap_tokens_per_s_ratio", otps / plain_full.tps)
cleanup()
os.remove(db)

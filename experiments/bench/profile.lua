-- experiments/bench/profile.lua: a Chrome trace (--out, chrome://tracing or ui.perfetto.dev) of
-- one training step and one decode step of a model (--model, or a random tiny qwen3), with each
-- section's top kernels by time, its launches and the host time between them
-- (lt.model.trace, runtime/model/profile.h). The decode step is the difference of two
-- sections, generate of 2 tokens and of 1 (the same prefill and first token): launches and gaps
-- per decode step are that difference. On CUDA with a Kineto-enabled LibTorch the device's own
-- kernels are traced too (--device_activity, default on CUDA); elsewhere the kernels are the
-- host's leaf operators (one launch each on a GPU). scripts/gpu-check --profile runs it.
local exp = require "lt.study"
local cfg = exp.args{ model = "", layers = 2, hidden = 64, heads = 4, kv_heads = 2, out = "", batch = 1,
                      prompt = 16, seq_len = 32, micro_batch = 2, dtype = "", top = 10, device_activity = "auto" }
if cfg.out == "" then error("profile bench: --out=FILE (the trace to write) is required", 0) end

local m, path, cleanup = require "experiments.bench.model"(cfg)
local dev = cfg.device_activity == "auto" and m.device:match("^cuda") ~= nil or cfg.device_activity == "true"
local V = m.config.vocab_size
local rows = lt.randint(0, V, { cfg.micro_batch, cfg.seq_len + 1 })
local prompt = lt.randint(0, V, { cfg.batch, cfg.prompt }):totable()
local train = { data = rows, steps = 1, micro_batch = cfg.micro_batch, log = false, progress = false }
local t = m:clone()
t:train_only("all")
-- warm-ups, untimed: the first call at a shape pays for allocation and kernel choice
lt.train.causal_lm(t, train)
m:generate(prompt, { max_new_tokens = 2, stop_ids = {} })
local r = lt.model.trace({
  { "training step", function() lt.train.causal_lm(t, train) end },
  { "generate 1 token", function() m:generate(prompt, { max_new_tokens = 1, stop_ids = {} }) end },
  { "generate 2 tokens", function() m:generate(prompt, { max_new_tokens = 2, stop_ids = {} }) end },
}, { out = cfg.out, device = dev })
t:free()
local train_s, g1, g2 = r.sections[1], r.sections[2], r.sections[3]
-- the timeline that launches on this device: the GPU's own where it was traced
local function tl(sec) return sec.device or sec.host end
lt.run.param("profile_source", r.source)
lt.run.param("profile_trace", cfg.out)
lt.run.param("profile_shape", ("batch %d, %d-token prompt; training micro-batch %d x seq %d"):format(cfg.batch,
             cfg.prompt, cfg.micro_batch, cfg.seq_len))
lt.run.log("profile/train_step_s", train_s.wall_s)
lt.run.log("profile/train_launches", tl(train_s).launches)
lt.run.log("profile/train_gap_s", tl(train_s).gap_s)
lt.run.log("profile/decode_step_s", g2.wall_s - g1.wall_s)
lt.run.log("profile/decode_launches_per_step", tl(g2).launches - tl(g1).launches)
lt.run.log("profile/decode_gap_s_per_step", tl(g2).gap_s - tl(g1).gap_s)
lt.run.log("profile/decode_kernel_s_per_step", tl(g2).kernel_s - tl(g1).kernel_s)
lt.run.log("profile/trace_events", r.events)
-- the top kernels: of the training step, and of the decode step (2 tokens minus 1, by name)
local function top(list, n)
  local out = {}
  for i = 1, math.min(n, #list) do out[i] = { name = list[i].name, count = list[i].count, seconds = list[i].seconds } end
  return out
end
local one = {}
for _, k in ipairs(tl(g1).kernels) do one[k.name] = k end
local step = {}
for _, k in ipairs(tl(g2).kernels) do
  local o = one[k.name] or { count = 0, seconds = 0 }
  if k.count > o.count then step[#step + 1] = { name = k.name, count = k.count - o.count, seconds = math.max(0, k.seconds - o.seconds) } end
end
table.sort(step, function(a, b) return a.seconds > b.seconds or (a.seconds == b.seconds and a.name < b.name) end)
lt.run.param("profile_top_train", lt.json.encode(top(tl(train_s).kernels, cfg.top)))
lt.run.param("profile_top_decode", lt.json.encode(top(step, cfg.top)))
print(("trace (%s, %d events) in %s"):format(r.source, r.events, cfg.out))
print(("training step %.4fs: %d launches, %.4fs between kernels; decode step %.5fs: %d launches, %.5fs between kernels")
  :format(train_s.wall_s, tl(train_s).launches, tl(train_s).gap_s, g2.wall_s - g1.wall_s,
          tl(g2).launches - tl(g1).launches, tl(g2).gap_s - tl(g1).gap_s))
for _, k in ipairs(top(step, cfg.top)) do print(("  decode %-28s %4d %10.6fs"):format(k.name, k.count, k.seconds)) end
cleanup()

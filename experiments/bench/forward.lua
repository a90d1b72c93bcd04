-- experiments/bench/forward.lua: prefill and decode throughput (tokens/s) of one model at
-- batch 1, 16 and 64, logged per batch size with each one's ratio to batch 1 (measured in
-- the same run). --model=PATH benchmarks a checkpoint; by default a random qwen3 of
-- --layers/--hidden is made in a temporary folder. On a GPU node add --device=cuda.
local exp = require "lt.experiment"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4,
                      prompt = 128, new_tokens = 32, batches = "1,16,64", repeats = 2 }

local path, cleanup = cfg.model, function() end
if path == "" then
  path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                                  kv_heads = cfg.kv_heads, vocab = 2048, seed = 1 }
end
local m = lt.model.load(path)
print(tostring(m))
local vocab = m.config.vocab_size

local function timed(fn)  -- best of cfg.repeats, seconds
  local best = math.huge
  for _ = 1, cfg.repeats do
    local t0 = lt.clock()
    fn()
    best = math.min(best, lt.clock() - t0)
  end
  return best
end

local base = {}
print(("%6s %14s %14s %10s %10s"):format("batch", "prefill tok/s", "decode tok/s", "x batch1", "x batch1"))
for b in cfg.batches:gmatch("%d+") do
  b = tonumber(b)
  local ids = lt.randint(0, vocab, {b, cfg.prompt})
  local prefill = timed(function() lt.no_grad(function() m:forward(ids, { logits = "last" }) end) end)
  local rows = ids:totable()
  local total = timed(function()
    m:generate(rows, { max_new_tokens = cfg.new_tokens, stop_ids = {} })
  end)
  local prefill_tps = b * cfg.prompt / prefill
  local decode_tps = b * (cfg.new_tokens - 1) / math.max(total - prefill, 1e-9)
  base.prefill, base.decode = base.prefill or prefill_tps, base.decode or decode_tps
  print(("%6d %14.0f %14.0f %10.2f %10.2f"):format(b, prefill_tps, decode_tps,
        prefill_tps / base.prefill, decode_tps / base.decode))
  lt.run.log("prefill_tokens_per_s", prefill_tps, { step = b })
  lt.run.log("decode_tokens_per_s", decode_tps, { step = b })
  lt.run.log("prefill_vs_batch1", prefill_tps / base.prefill, { step = b })
  lt.run.log("decode_vs_batch1", decode_tps / base.decode, { step = b })
end
cleanup()

-- experiments/bench/forward.lua: prefill and decode throughput (tokens/s) of one model at
-- batch 1, 16 and 64, logged per batch size with each one's ratio to batch 1 (measured in
-- the same run). --model=PATH benchmarks a checkpoint; by default a random qwen3 of
-- --layers/--hidden is made in a temporary folder. On a GPU node add --device=cuda.
-- --hf=python3 also measures the same checkpoint through HF transformers
-- (experiments/bench/hf_forward.py, with that Python) in the same run and logs HF's figures
-- and ltrun/HF ratios.
local exp = require "lt.experiment"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4,
                      prompt = 128, new_tokens = 32, batches = "1,16,64", repeats = 2,
                      dtype = "", hf = "", hf_attn = "sdpa" }

local path, cleanup = cfg.model, function() end
if path == "" then
  path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                                  kv_heads = cfg.kv_heads, vocab = 2048, seed = 1 }
end
local m = lt.model.load(path, { dtype = cfg.dtype ~= "" and cfg.dtype or nil })
print(tostring(m))

-- HF transformers on the same checkpoint, same shapes, same protocol; {batch = row}
local function hf_figures()
  if cfg.hf == "" then return nil end
  local script = exp.root .. "/experiments/bench/hf_forward.py"
  local cmd = ("'%s' '%s' '%s' --batches '%s' --prompt %d --new-tokens %d --repeats %d " ..
               "--device '%s' --dtype '%s' --attn '%s'"):format(
    cfg.hf, script, path, cfg.batches, cfg.prompt, cfg.new_tokens, cfg.repeats, m.device,
    m.dtype, cfg.hf_attn)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  local ok = p:close()
  if not ok or out == "" then error("forward bench: the HF side failed: " .. cmd, 0) end
  local res = lt.json.decode(out)
  lt.run.param("hf_torch", res.torch)
  lt.run.param("hf_transformers", res.transformers)
  local by_batch = {}
  for _, r in ipairs(res.rows) do by_batch[r.batch] = r end
  return by_batch
end
local hf = hf_figures()
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
  local h = hf and hf[b]
  if h then
    print(("%6s %14.0f %14.0f %10s %10s   HF; ltrun/HF %.2f, %.2f"):format("", h.prefill_tokens_per_s,
          h.decode_tokens_per_s, "", "", prefill_tps / h.prefill_tokens_per_s,
          decode_tps / h.decode_tokens_per_s))
    lt.run.log("hf_prefill_tokens_per_s", h.prefill_tokens_per_s, { step = b })
    lt.run.log("hf_decode_tokens_per_s", h.decode_tokens_per_s, { step = b })
    lt.run.log("prefill_vs_hf", prefill_tps / h.prefill_tokens_per_s, { step = b })
    lt.run.log("decode_vs_hf", decode_tps / h.decode_tokens_per_s, { step = b })
  end
end
cleanup()

-- experiments/bench/proxies.lua: CPU proxies of GPU costs (issue 35, item 5; model/profile.h),
-- exact counts that do not depend on the machine's speed or load, so that a session without
-- a GPU can measure and drive them down:
--   * ATen operators per block per decode step of greedy generate (batch 1, a 16-token
--     prompt; a random qwen3 of --layers/--hidden, or --model): kernels (leaf operators that
--     compute: one GPU kernel launch each), all operators dispatched, those ltrun's code calls
--     itself, and the kernels per step outside the blocks (head, sampling, bookkeeping); for
--     the dynamic cache (generate's default) and the static one (cache = "static", metrics
--     with the suffix /static);
--   * CPU tensor bytes allocated per block per decode step (what a block writes besides its
--     outputs' places), at the shape above and on the fp64 path a GPU takes (off the fused CPU
--     passes) with the cache dominating (batch 8, a 116-token prompt): against the block's
--     weights plus one read of its keys and values (issue 42 item 4: grouped heads no longer
--     copy K and V per query head);
--   * the peak CPU tensor bytes of one training step's loss and backward (every parameter
--     trains; its gradients included) at the Qwen3 vocabulary (--proxy_vocab, 151,936),
--     --proxy_seq tokens (512), batch 1, a 2-block qwen3 of width --proxy_hidden (256) with
--     its own LM head (untied): the trainer's loss (in vocabulary chunks) against the plain
--     loss over [T, V] fp32 logits, and the two losses.
-- scripts/gpu-check runs it (step bench_proxies, on the CPU on every node).
local exp = require "lt.study"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4, dtype = "",
                      proxy_seq = 512, proxy_hidden = 256, proxy_vocab = 151936 }

local m, path, cleanup = require "experiments.bench.model"(cfg)
-- the dynamic cache (generate's default) and the static one (cache = "static": preallocated
-- buffers, one step function over all blocks, the step a CUDA graph holds on a GPU); the static
-- path's metrics carry the suffix /static
for _, cache in ipairs{ "dynamic", "static" } do
  local d = lt.model.decode_ops(m, { batch = 1, prompt = 16, new_tokens = 8, cache = cache })
  print(("%s cache: ATen operators per block per decode step: %.1f kernels (%.1f dispatched, %.1f called by ltrun);"
         .. " %.1f kernels per step outside blocks"):format(cache, d.kernels, d.dispatched, d.top, d.outside))
  local names = {}
  for name, n in pairs(d.by_name) do names[#names + 1] = { name, n } end
  table.sort(names, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  for _, x in ipairs(names) do print(("  %-28s %5.1f"):format(x[1], x[2])) end
  local sfx = cache == "static" and "/static" or ""
  lt.run.log("decode_kernels_per_block" .. sfx, d.kernels)
  lt.run.log("decode_ops_dispatched_per_block" .. sfx, d.dispatched)
  lt.run.log("decode_kernels_outside_blocks" .. sfx, d.outside)
  lt.run.log("decode_bytes_per_block" .. sfx, d.bytes)
end
-- fp64 (the explicit / SDPA attention a GPU runs, not the CPU's fused passes), batch 8, 116 +
-- 4 positions: the cache outweighs the block
m:to("cpu", "float64")
local c = m.config
local weights = 0
for _, t in pairs(m:parameters(0)) do weights = weights + t:numel() * 8 end
local cache_bytes = 2 * 8 * c.num_key_value_heads * (116 + 4) * (c.head_dim or c.hidden_size / c.num_attention_heads) * 8
for _, cache in ipairs{ "dynamic", "static" } do
  local d = lt.model.decode_ops(m, { batch = 8, prompt = 116, new_tokens = 4, cache = cache })
  local sfx = cache == "static" and "/static" or ""
  print(("%s cache, fp64, batch 8, 116-token prompt: %.0f bytes allocated per block per decode step; block weights"
         .. " %d + one read of its cache %d = %d (%.2fx of that)"):format(cache, d.bytes, weights, cache_bytes,
         weights + cache_bytes, d.bytes / (weights + cache_bytes)))
  lt.run.log("decode_bytes_per_block_fp64_batch8" .. sfx, d.bytes)
  lt.run.log("decode_bytes_bound_fp64_batch8" .. sfx, weights + cache_bytes)
end
m:free()
cleanup()

local shape = { vocab = cfg.proxy_vocab, seq = cfg.proxy_seq, hidden = cfg.proxy_hidden, layers = 2, batch = 1 }
lt.run.param("proxy_shape", ("vocab %d, seq %d, hidden %d, 2 blocks, batch 1"):format(cfg.proxy_vocab,
             cfg.proxy_seq, cfg.proxy_hidden))
shape.chunk = 0  -- the plain loss: [B, T, V] fp32 logits, their log-softmax and gradients
local plain = lt.train.step_memory(shape)
shape.chunk = nil  -- the trainer's default: the loss in vocabulary chunks (train/loss.h)
local chunked = lt.train.step_memory(shape)
print(("training step peak, vocabulary %d, seq %d, hidden %d: plain loss %.1f MB (loss %.6f), chunked %.1f MB"
       .. " (loss %.6f): %.3fx"):format(cfg.proxy_vocab, cfg.proxy_seq, cfg.proxy_hidden, plain.peak_bytes / 1e6,
       plain.loss, chunked.peak_bytes / 1e6, chunked.loss, chunked.peak_bytes / plain.peak_bytes))
lt.run.log("train_step_peak_bytes", chunked.peak_bytes)
lt.run.log("train_step_peak_bytes/plain_loss", plain.peak_bytes)
lt.run.log("ratio/train_step_peak_vs_plain_loss", chunked.peak_bytes / plain.peak_bytes)
lt.run.log("train_step_loss_diff", math.abs(chunked.loss - plain.loss))

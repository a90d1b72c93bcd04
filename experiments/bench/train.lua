-- experiments/bench/train.lua: training throughput (tokens/s) of one model under several
-- freeze plans, as ratios to full training measured in the same run. `train_deep` skips
-- backward (and autograd bookkeeping) below the frozen shallow half; `train_deep_no_skip` is
-- the same plan with backward forced through every block (force_full_backward), so the
-- saving of skipping is the ratio between those two. `full_checkpointed` trains everything
-- with activation checkpointing (one extra forward per step, for memory). On a GPU node add
-- --device=cuda.
local exp = require "lt.study"
local cfg = exp.args{ model = "", layers = 8, hidden = 256, heads = 8, kv_heads = 4, seq_len = 128,
                      micro_batch = 8, steps = 6, warmup_steps = 2, repeats = 2,
                      peak_tflops = 989 }  -- dense bf16 peak of the GPU for MFU (H100 SXM: 989)

local base, path, cleanup = require "experiments.bench.model"(cfg)
local rows = lt.randint(0, base.config.vocab_size, { 64, cfg.seq_len + 1 })

local n = base.n_layers
local plans = {
  { "full", "all", "train_only", false },
  { "full_checkpointed", "all", "train_only", false, true },
  { "train_shallow", { lt.layers.deep(base, 0.5), "final_norm", "lm_head" }, "freeze", false },
  { "train_deep", { lt.layers.shallow(base, 0.5), "embeddings" }, "freeze", false },
  { "train_deep_no_skip", { lt.layers.shallow(base, 0.5), "embeddings" }, "freeze", true },
  { "last_block", lt.layers.range(n - 1, n - 1), "train_only", false },
  { "last_block_no_skip", lt.layers.range(n - 1, n - 1), "train_only", true },
}

local results, full = {}, nil
for _, p in ipairs(plans) do
  local name, spec, how, no_skip, ckpt = p[1], p[2], p[3], p[4], p[5] or false
  local best = 0
  for _ = 1, cfg.repeats do
    local m = base:clone()
    m[how](m, spec)
    -- a few steps first (allocator, caches), then the timed ones
    local o = { data = rows, steps = cfg.warmup_steps, micro_batch = cfg.micro_batch, log = false,
                progress = false, force_full_backward = no_skip, activation_checkpointing = ckpt }
    lt.train.causal_lm(m, o)
    o.steps = cfg.steps
    local r = lt.train.causal_lm(m, o)
    best = math.max(best, r.tokens_per_s)
    results[name] = { tokens_per_s = best, trainable = r.trainable_params, lowest = r.lowest_trainable_layer }
    m:free()
  end
  full = full or best
  lt.run.log("tokens_per_s/" .. name, best)
  lt.run.log("ratio/" .. name, best / full)
end

print(("%-20s %12s %8s %12s %8s"):format("plan", "trainable", "lowest", "tokens/s", "x full"))
for _, p in ipairs(plans) do
  local r = results[p[1]]
  print(("%-20s %12d %8d %12.0f %8.2f"):format(p[1], r.trainable, r.lowest, r.tokens_per_s,
                                               r.tokens_per_s / full))
end
if base.device:match("^cuda") then
  -- model FLOPs utilisation of full training: 6 FLOPs per parameter per token (forward +
  -- backward), attention's T^2 terms left out as usual for short sequences
  local mfu = 6 * results.full.trainable * results.full.tokens_per_s / (cfg.peak_tflops * 1e12)
  lt.run.log("mfu/full", mfu)
  print(("MFU of full training: %.1f%% of %g TFLOP/s"):format(100 * mfu, cfg.peak_tflops))
end
local skip = results.train_deep.tokens_per_s / results.train_deep_no_skip.tokens_per_s
local skip_last = results.last_block.tokens_per_s / results.last_block_no_skip.tokens_per_s
lt.run.log("skip_saving/train_deep", skip)
lt.run.log("skip_saving/last_block", skip_last)
print(("skipping backward below the frozen prefix: train_deep %.2fx, last_block %.2fx"):format(skip, skip_last))
cleanup()

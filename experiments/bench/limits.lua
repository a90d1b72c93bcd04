-- experiments/bench/limits.lua: the physical limits that scripts/gpu-check's report puts each
-- figure beside, the FLOP and byte counts behind them, and the cost of the paper's layer scan
-- at measured rates: in one place, checked against hand-computed values for a tiny shape by
-- tests/cli/bench_limits.sh. Loaded by its path (it returns its table); plain Lua, no lt.
--
-- Shapes are Qwen3-style decoders: `layers` blocks of width `hidden`, `heads` query heads and
-- `kv_heads` key/value heads of `head_dim`, a SwiGLU MLP of `intermediate`, `vocab` tokens.
local M = {}

-- A shape from a HF config.json table.
function M.shape(c)
  return { layers = c.num_hidden_layers, hidden = c.hidden_size, heads = c.num_attention_heads,
           kv_heads = c.num_key_value_heads or c.num_attention_heads,
           head_dim = c.head_dim or math.floor(c.hidden_size / c.num_attention_heads),
           intermediate = c.intermediate_size, vocab = c.vocab_size, tied = c.tie_word_embeddings and true or false }
end

-- Qwen3-1.7B(-Base)'s config.json: the model of the paper's scan (Table 8)
M.qwen3_1_7b = { layers = 28, hidden = 2048, heads = 16, kv_heads = 8, head_dim = 128, intermediate = 6144,
                 vocab = 151936, tied = true }

-- Weights one block multiplies by: q, k, v, o and the MLP's gate, up and down.
function M.block_matmul_params(s)
  local q = s.heads * s.head_dim
  local kv = s.kv_heads * s.head_dim
  return s.hidden * q + 2 * s.hidden * kv + q * s.hidden + 3 * s.hidden * s.intermediate
end
-- The LM head (tied or not, a [vocab, hidden] product per token); the embedding lookup is not
-- a product and is not counted.
function M.head_params(s) return s.vocab * s.hidden end
-- Norm weights: per block the input and post-attention norms and the q/k norms; the final norm.
function M.norm_params(s) return s.layers * (2 * s.hidden + 2 * s.head_dim) + s.hidden end
-- N of the FLOP counts: every weight a token is multiplied by.
function M.matmul_params(s) return s.layers * M.block_matmul_params(s) + M.head_params(s) end

-- Attention's score and value products per token per block at sequence length T, forward:
-- 2 FLOPs x (q.k over T keys + p.v over T values) x heads x head_dim. T in full, as PaLM's MFU
-- (appendix B: 6N + 12 L H Q T per token) counts it, without the causal mask's halving.
function M.attention_flops(s, T) return 4 * s.heads * s.head_dim * T end

-- Forward FLOPs per token at sequence length T (prefill, reference and old log-probs).
function M.forward_flops_per_token(s, T)
  return 2 * M.matmul_params(s) + s.layers * M.attention_flops(s, T)
end

-- Training FLOPs per token at sequence length T: the forward, the input gradients from the head
-- down to the lowest block that trains (or that the embeddings' gradient needs), and the weight
-- gradients of what trains. plan: nil (everything trains: 6N + 12 L H Q T), or
-- {lowest = l (0-based), blocks = number of blocks training, head = the LM head trains}.
function M.train_flops_per_token(s, T, plan)
  plan = plan or { lowest = 0, blocks = s.layers, head = true }
  local block, head = M.block_matmul_params(s), M.head_params(s)
  local below = s.layers - plan.lowest  -- blocks the backward runs through
  local input_grads = 2 * head + below * (2 * block + 2 * M.attention_flops(s, T))
  local weight_grads = plan.blocks * 2 * block + (plan.head and 2 * head or 0)
  return M.forward_flops_per_token(s, T) + input_grads + weight_grads
end
-- The single-layer plan of the paper: block l alone trains (embeddings and head frozen).
function M.layer_plan(l) return { lowest = l, blocks = 1, head = false } end

M.elem_bytes = { float32 = 4, fp32 = 4, bfloat16 = 2, bf16 = 2, float16 = 2, fp16 = 2, float64 = 8 }

-- Key and value bytes one position holds in the cache (every block).
function M.kv_bytes_per_token(s, elem) return 2 * s.layers * s.kv_heads * s.head_dim * elem end
-- Bytes of the weights a decode step reads: every weight once (a tied table once, as the head).
function M.weight_bytes(s, elem) return (M.matmul_params(s) + M.norm_params(s)) * elem end
-- The least a decode step of `batch` rows, each with `positions` cached positions, must read.
function M.decode_bytes(s, elem, batch, positions)
  return M.weight_bytes(s, elem) + batch * positions * M.kv_bytes_per_token(s, elem)
end
-- The memory-bandwidth floor of decode, in tokens/s (batch tokens per step).
function M.decode_floor_tokens_per_s(s, elem, batch, positions, bandwidth)
  return batch * bandwidth / M.decode_bytes(s, elem, batch, positions)
end

-- Devices: memory bandwidth (bytes/s) and dense bf16 tensor-core peak (FLOP/s), from NVIDIA's
-- datasheets (the sparse figures halved). The CPU's are measured in the same run
-- (experiments/bench/device.lua): a copy's bandwidth and the best fp32 GEMM rate.
M.devices = {
  { match = "H200", name = "NVIDIA H200 SXM (141 GB HBM3e)", bandwidth = 4.8e12, peak = 989e12,
    source = "NVIDIA H200 Tensor Core GPU datasheet: 4.8 TB/s; BF16 Tensor Core 1,979 TFLOPS with sparsity" },
  { match = "H100 NVL", name = "NVIDIA H100 NVL (94 GB HBM3)", bandwidth = 3.9e12, peak = 835e12,
    source = "NVIDIA H100 Tensor Core GPU datasheet: 3.9 TB/s; BF16 1,671 TFLOPS with sparsity" },
  { match = "H100 PCIe", name = "NVIDIA H100 PCIe (80 GB HBM2e)", bandwidth = 2.0e12, peak = 756e12,
    source = "NVIDIA H100 Tensor Core GPU datasheet: 2 TB/s; BF16 1,513 TFLOPS with sparsity" },
  { match = "H100", name = "NVIDIA H100 SXM (80 GB HBM3)", bandwidth = 3.35e12, peak = 989e12,
    source = "NVIDIA H100 Tensor Core GPU datasheet: 3.35 TB/s; BF16 Tensor Core 1,979 TFLOPS with sparsity" },
  { match = "A100", name = "NVIDIA A100 SXM (80 GB HBM2e)", bandwidth = 2.039e12, peak = 312e12,
    source = "NVIDIA A100 Tensor Core GPU datasheet: 2,039 GB/s; BF16 Tensor Core 312 TFLOPS dense" },
}
-- The entry for a GPU name as nvidia-smi prints it ("NVIDIA H100 80GB HBM3"), or nil.
function M.device_for(gpu)
  for _, d in ipairs(M.devices) do
    if gpu:find(d.match, 1, true) then return d end
  end
end

-- The paper's scan (Table 8 of ../shared/papers/004: Qwen3-1.7B-Base, GRPO in veRL) and what
-- the table leaves open, assumed here and printed with the estimate.
M.paper = {
  runs = 29,             -- 28 single-layer runs and the full-parameter baseline
  layers = 28,
  prompts = 512,         -- train batch size
  group = 4,             -- answers per prompt
  max_response = 3072,
  mini_batch = 128,      -- PPO mini-batch: 4 optimizer steps per GRPO step
  ppo_epochs = 1,        -- veRL's default; Table 8's "Epochs 4" read as passes over the data
  data_epochs = 4,
  problems = 50000,      -- NuminaMath-CoT downsampled (appendix A.2)
  -- assumed (not in the paper):
  prompt_len = 256,      -- tokens of a templated math problem
  response_mean = 1536,  -- half the cap
  -- evaluation of each run's final model on the 12 benchmarks (public test-set sizes; AMC
  -- as Avg@32), every item generated, answers of eval_tokens on average
  eval_items = 500 + 1319 + 675 + 83 * 32 + 164 + 378 + 1055 + 198 + 12032 + 1346 + 541 + 2750,
  eval_prompt = 256, eval_tokens = 1024,
}
-- GRPO steps per run: data epochs x full batches of the problems (veRL drops the last, partial one).
function M.paper_steps(p) return p.data_epochs * math.floor(p.problems / p.prompts) end

-- The scan's device-hours at measured efficiencies: r = {bandwidth =, peak = (the device's),
-- decode_eff = (decode's fraction of its bandwidth floor), decode_batch = (rows decoding at once),
-- forward_eff = (a forward pass's fraction of the peak), train_eff = (training's MFU)}, on shape
-- s (default Qwen3-1.7B) in dtype bytes elem (default 2, bf16). Each measured fraction of the
-- limit is carried from the measured shape to s: the time of a step is its FLOPs (or bytes) at
-- s over the limit times that fraction.
function M.scan_cost(r, p, s, elem)
  p, s, elem = p or M.paper, s or M.qwen3_1_7b, elem or 2
  local rows = p.prompts * p.group
  local T = p.prompt_len + p.response_mean
  local steps = M.paper_steps(p)
  -- decode `n` rows of `len` new tokens after `prompt` tokens, `decode_batch` rows at a time
  local function generate_s(n, prompt, len)
    local batches = math.ceil(n / r.decode_batch)
    local step_s = M.decode_bytes(s, elem, math.min(n, r.decode_batch), prompt + len / 2) / (r.bandwidth * r.decode_eff)
    local prefill_s = n * prompt * M.forward_flops_per_token(s, prompt) / (r.peak * r.forward_eff)
    return batches * len * step_s + prefill_s
  end
  local forward_s = rows * T * M.forward_flops_per_token(s, T) / (r.peak * r.forward_eff)
  local per_step = { rollout = generate_s(rows, p.prompt_len, p.response_mean), reference = forward_s }
  -- update: the old log-probs (a forward) and the PPO epochs' training on every token
  local single, full = 0, M.train_flops_per_token(s, T)
  for l = 0, p.layers - 1 do single = single + M.train_flops_per_token(s, T, M.layer_plan(l)) end
  local layer_runs = p.runs - 1
  local update_flops = (single + full) / p.runs  -- the mean over the runs: 28 single-layer, 1 full
  per_step.update = forward_s + p.ppo_epochs * rows * T * update_flops / (r.peak * r.train_eff)
  local eval_s = generate_s(p.eval_items, p.eval_prompt, p.eval_tokens)
  local hours = { rollout = p.runs * steps * per_step.rollout / 3600, reference = p.runs * steps * per_step.reference / 3600,
                  update = p.runs * steps * per_step.update / 3600, evaluation = p.runs * eval_s / 3600 }
  hours.total = hours.rollout + hours.reference + hours.update + hours.evaluation
  return { hours = hours, steps = steps, rows = rows, per_step_s = per_step, eval_s = eval_s,
           layer_runs = layer_runs, tokens_per_step = rows * T }
end

return M

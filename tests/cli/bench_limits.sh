# tests/cli/bench_limits.sh: experiments/bench/limits.lua's FLOP and byte counts, device table
# and scan cost against values computed by hand for a tiny shape (2 blocks, width 8, 2 heads
# and 1 KV head of 4, MLP 16, vocab 10, untied head).
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/cli/common.bash"
cat > "$SCRATCH/limits_check.lua" <<'LUA'
local L = dofile(arg[1] .. "/experiments/bench/limits.lua")
local s = L.shape{ num_hidden_layers = 2, hidden_size = 8, num_attention_heads = 2, num_key_value_heads = 1,
                   head_dim = 4, intermediate_size = 16, vocab_size = 10, tie_word_embeddings = false }
local bad = 0
local function eq(what, got, want)
  if math.abs(got - want) > 1e-9 * math.max(1, math.abs(want)) then
    print(("MISMATCH %s: got %.17g, want %.17g"):format(what, got, want)); bad = bad + 1
  end
end
-- q 8x8, k and v 8x4 each, o 8x8, gate/up/down 3 x 8x16 = 64 + 64 + 64 + 384
eq("block_matmul_params", L.block_matmul_params(s), 576)
eq("head_params", L.head_params(s), 80)
eq("matmul_params", L.matmul_params(s), 2 * 576 + 80)
eq("norm_params", L.norm_params(s), 2 * (2 * 8 + 2 * 4) + 8)
eq("attention_flops T=5", L.attention_flops(s, 5), 4 * 2 * 4 * 5)
eq("forward_flops_per_token T=5", L.forward_flops_per_token(s, 5), 2 * 1232 + 2 * 160)
-- full training: 6N + 12 L H Q T = 7392 + 960
eq("train_flops_per_token T=5", L.train_flops_per_token(s, 5), 8352)
-- the last block alone: forward 2784, input grads through the head and block 1 (160 + 1152 + 320),
-- block 1's weight grads 1152
eq("train_flops_per_token T=5, layer 1", L.train_flops_per_token(s, 5, L.layer_plan(1)), 2784 + 1632 + 1152)
eq("kv_bytes_per_token bf16", L.kv_bytes_per_token(s, 2), 2 * 2 * 1 * 4 * 2)
eq("weight_bytes bf16", L.weight_bytes(s, 2), (1232 + 56) * 2)
eq("decode_bytes bf16, 3 rows at 7 positions", L.decode_bytes(s, 2, 3, 7), 2576 + 3 * 7 * 32)
eq("decode floor tokens/s", L.decode_floor_tokens_per_s(s, 2, 3, 7, 3248 * 100), 300)
eq("paper steps", L.paper_steps(L.paper), 4 * 97)
eq("H100 SXM bandwidth", L.device_for("NVIDIA H100 80GB HBM3").bandwidth, 3.35e12)
eq("H100 PCIe bandwidth", L.device_for("NVIDIA H100 PCIe").bandwidth, 2.0e12)
eq("H200 peak", L.device_for("NVIDIA H200").peak, 989e12)
assert(L.device_for("Tesla T4") == nil, "an unknown GPU has no limits")
-- a scan of 3 runs (2 layers + full) of 1 step, 2 rows of 2 + 2 tokens, all rates 1
local p = { runs = 3, layers = 2, prompts = 1, group = 2, ppo_epochs = 1, data_epochs = 1, problems = 1,
            prompt_len = 2, response_mean = 2, eval_items = 0, eval_prompt = 2, eval_tokens = 2 }
local c = L.scan_cost({ bandwidth = 1, peak = 1, decode_eff = 1, forward_eff = 1, train_eff = 1, decode_batch = 2 }, p, s, 2)
-- rollout: 2 decode steps of 2768 bytes (2576 + 2 rows x 3 positions x 32) + prefill 4 x 2592
eq("rollout s per step", c.per_step_s.rollout, 2 * 2768 + 4 * 2592)
eq("reference s per step", c.per_step_s.reference, 8 * 2720)
-- update: old log-probs 21760 + 8 tokens x mean(layer 0 6848, layer 1 5440, full 8160)
eq("update s per step", c.per_step_s.update, 21760 + 8 * (6848 + 5440 + 8160) / 3)
eq("rollout hours", c.hours.rollout, 3 * 15904 / 3600)
eq("total hours", c.hours.total, 3 * (15904 + 21760 + 21760 + 8 * 20448 / 3) / 3600)
print(bad == 0 and "limits ok" or ("limits: " .. bad .. " mismatches"))
LUA
out=$("$LTRUN" -e "arg = {'$root'}; dofile('$SCRATCH/limits_check.lua')" 2>&1)
check "limits.lua matches the hand-computed values ($out)" contains "$out" "limits ok"
finish

-- scripts/gpu-check.d/smoke.lua: the session device (--device) against the CPU on one small
-- random Qwen3: logits (fp32 and bf16), greedy tokens, a training step under the device's
-- loop (bf16 autocast on CUDA) and a GRPO iteration. Run by scripts/gpu-check; on a CPU
-- session it compares the CPU with itself, which checks the script. Exits non-zero on a
-- failure and logs each measured distance as a metric.
local T = require "lt.test"
local exp = require "lt.study"
local dev = lt.device
local path, cleanup = exp.temp_model{ layers = 4, hidden = 128, heads = 4, kv_heads = 2, vocab = 1024, seed = 1 }
local m = lt.model.load(path)                       -- the session device
local ref = lt.model.load(path, { device = "cpu" })
print(("smoke: %s against cpu"):format(m.device))
local ids = lt.randint(0, m.config.vocab_size, { 4, 24 })

local function rel_max_diff(a, b)  -- max |a - b| over max |b|, on the CPU
  a, b = a:to("cpu"):float(), b:to("cpu"):float()
  return (a - b):abs():max() / b:abs():max()
end

T.case("fp32 logits: device against cpu", function()
  local a = lt.no_grad(function() return m:forward(ids).logits end)
  local b = lt.no_grad(function() return ref:forward(ids).logits end)
  local d = rel_max_diff(a, b)
  lt.run.log("smoke/fp32_logits_rel_diff", d)
  -- fp32 with another summation order: per matmul about K * 2^-24 of the largest term with
  -- K <= 384 (the MLP's width), about 2e-5; four blocks with norms and attention compound
  -- that to ~1e-4. TF32 would give ~1e-3 (LibTorch leaves it off for matmuls): 1e-3 passes
  -- fp32 and fails anything coarser than TF32.
  T.ok(d < 1e-3, ("fp32 logits differ by %.3g of their max"):format(d))
end)

T.case("bf16 logits: within bf16 noise of fp32", function()
  local h = lt.model.load(path, { dtype = "bfloat16" })
  local a = lt.no_grad(function() return h:forward(ids).logits end)
  local b = lt.no_grad(function() return ref:forward(ids).logits end)
  local d = rel_max_diff(a, b)
  lt.run.log("smoke/bf16_logits_rel_diff", d)
  -- bf16 keeps 8 significant bits (relative step 2^-8 = 0.0039); rounding weights and each
  -- block's activations over four blocks stays within a few steps: 0.05 = ~13 steps
  T.ok(d < 0.05, ("bf16 logits differ by %.3g of their max"):format(d))
  h:free()
end)

T.case("greedy tokens: each device choice is an argmax on the cpu within fp32 error", function()
  local prompts = ids:narrow(1, 0, 8):totable()
  local n_new = 8
  local out = m:generate(prompts, { max_new_tokens = n_new, stop_ids = {} })
  local rows = {}
  for r = 1, #prompts do  -- prompt + new tokens (generate gives the new ones, or the whole row)
    local row = out[r]
    if #row == n_new then
      row = {}
      for _, v in ipairs(prompts[r]) do row[#row + 1] = v end
      for _, v in ipairs(out[r]) do row[#row + 1] = v end
    end
    T.eq(#row, #prompts[r] + n_new, "row length")
    rows[r] = row
  end
  local worst = 0
  for r = 1, #rows do
    local row = lt.tensor(rows[r]):long():unsqueeze(0)
    local logits = lt.no_grad(function() return ref:forward(row).logits end)[0]:float()
    local L = row:size(1)
    for t = L - n_new, L - 1 do
      local lp = logits[t - 1]
      local gap = lp:max() - lp[row[0][t]]  -- 0 when the device's token is the cpu's argmax
      worst = math.max(worst, gap / lp:abs():max())
    end
  end
  lt.run.log("smoke/greedy_worst_gap", worst)
  T.ok(worst < 1e-3, ("a greedy token is %.3g below the cpu's best (relative)"):format(worst))
end)

T.case("training steps under the device's loop change the weights, finite loss", function()
  local t = m:clone():train_only("all")
  local before = t:parameters()["model.layers.3.mlp.down_proj.weight"]:clone()
  local r = lt.train.causal_lm(t, { data = lt.randint(0, m.config.vocab_size, { 16, 33 }), seq_len = 32,
                                    steps = 3, lr = 1e-3, micro_batch = 4, log = false, progress = false })
  T.eq(#r.losses, 3)
  for i, l in ipairs(r.losses) do T.ok(l == l and l < math.huge, "finite loss at step " .. i) end
  local after = t:parameters()["model.layers.3.mlp.down_proj.weight"]
  T.ok(not after:equal(before:to(after.device)), "the last block's weights changed")
  lt.run.log("smoke/train_tokens_per_s", r.tokens_per_s)
  t:free()
end)

T.case("a GRPO iteration runs on the device", function()
  local t = m:clone()
  t:train_only(t.n_layers - 1)
  local items = {}
  for i = 1, 4 do items[i] = { question = "q" .. i, answer = "1" } end
  local g = lt.rl.grpo(t, { data = items, template = "{question}", prompts = 2, group_size = 4,
    max_response = 8, iterations = 1, lr = 1e-5, log = false, progress = false, stop_ids = {},
    decontaminate = 0, rewards = { len = function(item, response) return #response % 3 end } })
  T.eq(g.steps, 1)
  t:free()
end)

cleanup()
T.finish()

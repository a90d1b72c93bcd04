-- experiments/layer_scan/presets.lua: the hyper-parameter tables of *Is One Layer Enough?*
-- (Appendix A, Tables 8-11) as presets of the layer-scan study (--preset=NAME), every value with
-- its source: the table's row, or, where the paper's text lost the number (the learning rates: the
-- copy of the paper at hand has blanks in every table's Learning Rate row and in A.2-A.5's "with
-- learning rate ..."), "blank in the paper" with the value used and where that comes from.
-- study.study prints them when the preset is chosen; explicit --key=value options win over them.
--
-- How a table's rows map onto the scan's args (veRL, which A.2 names, and verl-agent count a
-- train batch in prompts, each with G responses; a PPO mini-batch in prompts too, so
-- mini_batches = train batch / mini batch; a micro batch in sequences per pass):
--   RL Algorithm -> algo (and task), Train Batch Size -> prompts, PPO Mini Batch Size ->
--   mini_batches, PPO Micro Batch Size -> micro_batch, Group Size -> group_size, Max Response
--   Length -> max_response, KL Coefficient -> kl, Clip Range -> clip_ratio, Epochs -> epochs
--   (read as PPO epochs over each batch of rollouts; the table does not say whether it counts
--   passes over the data instead), Steps -> steps.
local M = {}

local function blank_lr(task, lr)
  return ("blank in the paper (the Learning Rate row and the tuned rate of the text lost their numbers): "
          .. "0, the %s task's default lr %g (lt.scan.task.task_defaults); the paper tunes the full job's rate, "
          .. "--lr_sweep"):format(task, lr)
end

M.presets = {
  -- Table 8 (A.2): Qwen3-1.7B/4B/8B-Base, GRPO on NuminaMath-CoT, veRL
  ["qwen3-grpo"] = {
    task = { "math", "A.2: GRPO on NuminaMath-CoT's math problems (the math task; --data for the prompts)" },
    algo = { "grpo", "Table 8: RL Algorithm GRPO" },
    lr = { 0, blank_lr("math", 1e-4) },
    prompts = { 512, "Table 8: Train Batch Size 512 (prompts, veRL's data.train_batch_size)" },
    mini_batches = { 4, "Table 8: PPO Mini Batch Size 128, 512 / 128 = 4 optimizer steps per epoch" },
    micro_batch = { 8, "Table 8: PPO Micro Batch Size 8" },
    group_size = { 4, "Table 8: Group Size 4" },
    max_response = { 3072, "Table 8: Max Response Length 3072" },
    kl = { 0.001, "Table 8: KL Coefficient 0.001" },
    clip_ratio = { 0.2, "Table 8: Clip Range 0.2" },
    epochs = { 4, "Table 8: Epochs 4 (read as PPO epochs over each batch)" },
    agg = { "paper", "§2.1 Eq. 2 with A.3: GRPO's per-response length normalisation, which Dr. GRPO removes" },
  },
  -- Table 9 (A.3): Qwen2.5-Math-1.5B, Dr. GRPO on MATH, Oat
  ["dr-grpo"] = {
    task = { "math", "A.3: Dr. GRPO on the MATH training set (the math task; --data for the prompts)" },
    algo = { "dr_grpo", "Table 9: RL Algorithm Dr. GRPO" },
    lr = { 0, blank_lr("math", 1e-4) },
    prompts = { 128, "Table 9: Train Batch Size 128 (prompts)" },
    group_size = { 8, "Table 9: Group Size 8" },
    max_response = { 3072, "Table 9: Max Response Length 3072" },
    kl = { 0, "Table 9: KL Coefficient 0" },
    clip_ratio = { 0.2, "Table 9: Clip Range 0.2" },
    epochs = { 8, "Table 9: Epochs 8 (read as PPO epochs over each batch)" },
    agg = { "paper", "A.3: no response-length and no std normalisation (the constant normaliser)" },
  },
  -- Table 10 (A.4): Qwen2.5-1.5B/3B-Instruct, GiGPO on ALFWorld, verl-agent
  ["gigpo-alfworld"] = {
    task = { "agent", "A.4: GiGPO in ALFWorld's household tasks (the agent task)" },
    algo = { "gigpo", "Table 10: RL Algorithm GiGPO" },
    data = { "household", "A.4 trains in ALFWorld's household tasks; lt.envs household is its stand-in" },
    bench = { "household", "A.4 scores ALFWorld success; the same environment as --data" },
    lr = { 0, blank_lr("agent", 1e-4) },
    prompts = { 256, "Table 10: Train Batch Size 256 (task groups, verl-agent's data.train_batch_size)" },
    mini_batches = { 1, "Table 10: PPO Mini Batch Size 256, 256 / 256 = 1 optimizer step per epoch" },
    micro_batch = { 32, "Table 10: PPO Micro Batch Size 32" },
    group_size = { 8, "Table 10: Group Size 8" },
    max_response = { 512, "Table 10: Max Response Length 512 (new tokens per action; an action ends at its line's end)" },
    kl = { 0.01, "Table 10: KL Coefficient 0.01" },
    clip_ratio = { 0.2, "Table 10: Clip Range 0.2" },
    steps = { 150, "Table 10: Steps 150" },
  },
  -- Table 11 (A.5): DeepSeek-R1-Distill-Qwen-7B, GRPO on Skywork-OR1's math problems
  ["r1-distill"] = {
    task = { "math", "A.5: GRPO on Skywork-OR1's math problems (the math task; --data for the prompts)" },
    algo = { "grpo", "Table 11: RL Algorithm GRPO" },
    lr = { 0, blank_lr("math", 1e-4) },
    prompts = { 256, "Table 11: Train Batch Size 256 (prompts)" },
    mini_batches = { 2, "Table 11: PPO Mini Batch Size 128, 256 / 128 = 2 optimizer steps per epoch" },
    micro_batch = { 2, "Table 11: PPO Micro Batch Size 2" },
    group_size = { 8, "Table 11: Group Size 8" },
    max_response = { 16384, "Table 11: Max Response Length 16384" },
    kl = { 0, "Table 11: KL Coefficient 0" },
    clip_ratio = { 0.2, "Table 11: Clip Range 0.2" },
    epochs = { 8, "Table 11: Epochs 8 (read as PPO epochs over each batch)" },
    agg = { "paper", "§2.1: GRPO's one objective, per-response length normalisation (Table 11 names no aggregation)" },
  },
}

-- which table each preset is
M.tables = { ["qwen3-grpo"] = "Table 8", ["dr-grpo"] = "Table 9", ["gigpo-alfworld"] = "Table 10",
             ["r1-distill"] = "Table 11" }

return M

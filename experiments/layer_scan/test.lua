-- experiments/layer_scan/test.lua (ctest lua.layer_scan): the layer scan's --preset=NAME against
-- the paper's Tables 8-11 (*Is One Layer Enough?*, Appendix A; the rows typed here from the paper):
-- every row of each table reaches the scan's args with that value and names its table; the learning
-- rates, blank in the paper's text, are named blank with the value used; study.study prints every
-- value with its source and says when an explicit value replaced one; the agent task keeps a
-- preset's KL.
local T = require "lt.test"
local presets = require "experiments.layer_scan.presets"
local study = require "lt.study"
local layer_scan = require "experiments.layer_scan.layer_scan"

-- the tables as the paper prints them (row → value), and the arg each row sets
local tables = {
  ["qwen3-grpo"] = { table = "Table 8", algo = "GRPO", train_batch = 512, mini = 128, micro = 8, group = 4,
                     response = 3072, kl = 0.001, clip = 0.2, epochs = 4 },
  ["dr-grpo"] = { table = "Table 9", algo = "Dr. GRPO", train_batch = 128, group = 8, response = 3072, kl = 0,
                  clip = 0.2, epochs = 8 },
  ["gigpo-alfworld"] = { table = "Table 10", algo = "GiGPO", train_batch = 256, mini = 256, micro = 32, group = 8,
                         response = 512, kl = 0.01, clip = 0.2, steps = 150 },
  ["r1-distill"] = { table = "Table 11", algo = "GRPO", train_batch = 256, mini = 128, micro = 2, group = 8,
                     response = 16384, kl = 0, clip = 0.2, epochs = 8 },
}
local algo_arg = { GRPO = "grpo", ["Dr. GRPO"] = "dr_grpo", GiGPO = "gigpo" }

T.case("each preset is its table: every row's value, with the table named as its source", function()
  T.same_table(require("lt.study.args").sorted_keys(presets.presets), { "dr-grpo", "gigpo-alfworld", "qwen3-grpo", "r1-distill" })
  for name, t in pairs(tables) do
    local p = presets.presets[name]
    T.eq(presets.tables[name], t.table)
    local cfg = layer_scan.config{ preset = name }
    local function row(arg, want, label)
      T.eq(cfg[arg], want, ("%s --%s (%s)"):format(name, arg, label))
      local src = p[arg] and p[arg][2] or ""
      T.ok(src:find(t.table .. ": " .. label, 1, true), ("%s --%s: source '%s' names %s: %s"):format(name, arg, src, t.table, label))
    end
    row("algo", algo_arg[t.algo], "RL Algorithm " .. t.algo)
    row("prompts", t.train_batch, "Train Batch Size " .. t.train_batch)
    if t.mini then
      row("mini_batches", t.train_batch / t.mini, "PPO Mini Batch Size " .. t.mini)
    else
      T.eq(p.mini_batches, nil, name .. ": the table has no mini-batch row")
    end
    if t.micro then row("micro_batch", t.micro, "PPO Micro Batch Size " .. t.micro) end
    row("group_size", t.group, "Group Size " .. t.group)
    row("max_response", t.response, "Max Response Length " .. t.response)
    row("kl", t.kl, "KL Coefficient " .. t.kl)
    row("clip_ratio", t.clip, "Clip Range " .. t.clip)
    if t.epochs then row("epochs", t.epochs, "Epochs " .. t.epochs) end
    if t.steps then row("steps", t.steps, "Steps " .. t.steps) end
    -- the blank learning rate: named blank, with the value used and its source
    T.eq(cfg.lr, 0)
    T.ok(p.lr[2]:find("^blank in the paper") and p.lr[2]:find("task's default lr 0.0001", 1, true), p.lr[2])
    -- every value has a source
    for k, v in pairs(p) do T.ok(type(v) == "table" and type(v[2]) == "string" and #v[2] > 0, name .. " --" .. k) end
  end
end)

T.case("the chosen preset is printed, every value with its source; an explicit value is said to replace it", function()
  local lines = layer_scan.preset_lines{ preset = "qwen3-grpo", group_size = 2 }
  local text = table.concat(lines, "\n")
  T.eq(lines[1], "preset qwen3-grpo:")
  T.eq(#lines, 1 + 12)  -- one line per value
  T.ok(text:find("  --kl=0.001  (Table 8: KL Coefficient 0.001)", 1, true), text)
  T.ok(text:find("  --group_size=4  (Table 8: Group Size 4) — replaced by the given --group_size=2", 1, true), text)
  T.ok(text:find("  --lr=0  (blank in the paper", 1, true), text)
  T.eq(layer_scan.config{ preset = "qwen3-grpo", group_size = 2 }.group_size, 2)
  T.same_table(layer_scan.preset_lines{}, {})
  T.ok(layer_scan.help():find("preset --preset=gigpo-alfworld: ", 1, true), "help lists the presets")
end)

T.case("an agent scan keeps the preset's KL; -1 alone still stands for agent.lua's 0", function()
  local st = require "lt.scan.task"
  local cfg = layer_scan.config{ preset = "gigpo-alfworld" }
  st.resolve(cfg)
  T.eq(cfg.task, "agent")
  T.eq(st.grpo_options(cfg).kl, 0.01)
  T.eq(st.grpo_options{ task = "agent", algo = "gigpo", kl = -1 }.kl, 0)
  local q = layer_scan.config{ preset = "qwen3-grpo" }
  local go = st.grpo_options(q)
  T.same_table({ go.kl, go.epochs, go.mini_batches, go.group_size, go.prompts, go.max_response, go.agg },
               { 0.001, 4, 4, 4, 512, 3072, "seq-mean-token-mean" })
  -- Tables 8 and 11 are both GRPO: one aggregation, §2.1's (r1-distill fell back to token-mean)
  T.eq(st.grpo_options(layer_scan.config{ preset = "r1-distill" }).agg, go.agg)
end)

T.case("study.study: a preset value with a source is checked like any other", function()
  T.raises(function()
    study.study{ name = "bad", args = { n = { 3, "n", min = 1 } }, presets = { p = { n = { 0, "Table 1" } } }, run = print }
  end, "below the least allowed")
  T.raises(function()
    study.study{ name = "bad", args = { n = { 3, "n" } }, presets = { p = { n = { 4 } } }, run = print }
  end, "expected a value or { value, \"source\" }")
end)
T.finish()

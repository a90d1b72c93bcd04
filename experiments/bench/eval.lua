-- experiments/bench/eval.lua: evaluation speed, items/s per protocol on one benchmark, with
-- the batched harness against batch size 1 (the baseline) in the same run.
-- `ltrun experiments/bench/eval.lua --model=PATH --bench=ceval:DIR --limit=200`
local exp = require "lt.experiment"
local cfg = exp.args{ model = "", bench = "antonyms", limit = 64, batch_size = 16 }

local path, cleanup = cfg.model, function() end
if path == "" then
  path, cleanup = exp.temp_model{ layers = 4, hidden = 128, heads = 4, kv_heads = 2, vocab = 1024, seed = 1 }
end
local m = lt.model.load(path)

local function rate(protocol, batch)
  local t0 = lt.clock()
  local s = lt.run.child(("%s_b%d"):format(protocol, batch), function()
    return lt.eval.run(m, cfg.bench, { protocols = { protocol }, limit = cfg.limit, batch_size = batch,
                                       max_new_tokens = 16 })
  end)
  return s[protocol].n / (lt.clock() - t0)
end

print(("%-9s %12s %12s %8s"):format("protocol", "items/s b=1", ("items/s b=%d"):format(cfg.batch_size), "ratio"))
for _, protocol in ipairs{ "logit", "generate" } do
  local one, many = rate(protocol, 1), rate(protocol, cfg.batch_size)
  lt.run.log(protocol .. "/items_per_s", many)
  lt.run.log(protocol .. "/items_per_s_batch1", one)
  lt.run.log(protocol .. "/batched_vs_batch1", many / one)
  print(("%-9s %12.1f %12.1f %8.2f"):format(protocol, one, many, many / one))
end
cleanup()

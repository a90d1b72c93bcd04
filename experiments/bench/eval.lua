-- experiments/bench/eval.lua: evaluation speed, items/s per protocol on one benchmark, with
-- the batched harness against batch size 1 (the baseline) in the same run.
-- `ltrun experiments/bench/eval.lua --model=PATH --bench=ceval:DIR --limit=200`
local exp = require "lt.study"
local cfg = exp.args{ model = "", bench = "antonyms", limit = 64, batch_size = 16 }

local path, cleanup = cfg.model, function() end
if path == "" then
  path, cleanup = exp.temp_model{ layers = 4, hidden = 128, heads = 4, kv_heads = 2, vocab = 1024, seed = 1 }
end
local m = lt.model.load(path)

local function rate(protocol, batch, refill)
  local t0 = lt.clock()
  local s = lt.run.child(("%s_b%d%s"):format(protocol, batch, refill and "_refill" or ""), function()
    return lt.eval.run(m, cfg.bench, { protocols = { protocol }, limit = cfg.limit, batch_size = batch,
                                       max_new_tokens = 16, refill = refill })
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
-- the generate protocol with continuous batching (refill) against length buckets, same batch size
local buckets, refill = rate("generate", cfg.batch_size), rate("generate", cfg.batch_size, true)
lt.run.log("generate/items_per_s_refill", refill)
lt.run.log("generate/refill_vs_buckets", refill / buckets)
print(("generate at b=%d: %.1f items/s with refill, %.1f in length buckets: %.2fx"):format(
  cfg.batch_size, refill, buckets, refill / buckets))
cleanup()

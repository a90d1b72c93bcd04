-- experiments/bench/store.lua: metric insert rate into the run store, rows/s, with the
-- store's batching (rows buffered, one transaction per flush) against the baseline of one
-- transaction per row (a flush after every log), in the same run and the same DB.
local exp = require "lt.study"
local cfg = exp.args{ rows = 200000, baseline_rows = 2000 }

local function rate(n, flush_each)
  local t0 = lt.clock()
  lt.run.child(flush_each and "one_txn_per_row" or "batched", function()
    for i = 1, n do
      lt.run.log("loss", i * 1e-3, { step = i })
      if flush_each then lt.run.flush() end
    end
    lt.run.flush()
  end)
  return n / (lt.clock() - t0)
end

local batched = rate(cfg.rows, false)
local baseline = rate(cfg.baseline_rows, true)
local layers = (function()
  local t0, vals = lt.clock(), {}
  for l = 1, 64 do vals[l] = l * 0.5 end
  local n = math.floor(cfg.rows / 64)
  for g = 1, n do lt.run.log_layers("js", vals, { grp = g }) end
  lt.run.flush()
  return n * 64 / (lt.clock() - t0)
end)()

lt.run.log("metric_rows_per_s", batched)
lt.run.log("metric_rows_per_s_one_txn_per_row", baseline)
lt.run.log("batched_vs_one_txn_per_row", batched / baseline)
lt.run.log("layer_metric_rows_per_s", layers)
print(("metrics, batched:            %12.0f rows/s"):format(batched))
print(("metrics, one txn per row:    %12.0f rows/s"):format(baseline))
print(("batched / one txn per row:   %12.1f x"):format(batched / baseline))
print(("layer metrics (64 per call): %12.0f rows/s"):format(layers))

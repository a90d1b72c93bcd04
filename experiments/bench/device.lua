-- experiments/bench/device.lua: this machine's limits, measured, for scripts/gpu-check's
-- "of the limit" column on --device cpu (a GPU's come from its datasheet, limits.lua):
--   * memory bandwidth: the best of --repeats copies of a --mb MB fp32 tensor into another,
--     bytes read plus bytes written per second (a STREAM-like copy through ATen's copy_);
--   * compute peak: the best fp32 GEMM rate of --gemm x --gemm products (2 n^3 FLOPs each),
--     the dtype the CPU benches run in.
-- Logs copy_bytes_per_s and gemm_flops_per_s.
local exp = require "lt.study"
local cfg = exp.args{ mb = 256, gemm = 512, repeats = 5 }

local n = math.floor(cfg.mb * 1e6 / 4)
local a, b = lt.rand({ n }), lt.zeros({ n })
b:copy(a)  -- touch every page first, untimed
local best = math.huge
for _ = 1, cfg.repeats do
  local t0 = lt.clock()
  b:copy(a)
  best = math.min(best, lt.clock() - t0)
end
local bw = 2 * 4 * n / best
lt.run.log("copy_bytes_per_s", bw)
a, b = nil, nil
collectgarbage()

local g = cfg.gemm
local x, y = lt.randn({ g, g }), lt.randn({ g, g })
x:matmul(y)
local gbest = math.huge
for _ = 1, cfg.repeats do
  local t0 = lt.clock()
  x:matmul(y)
  gbest = math.min(gbest, lt.clock() - t0)
end
local flops = 2 * g * g * g / gbest
lt.run.log("gemm_flops_per_s", flops)
print(("copy bandwidth %.2f GB/s (%d MB, read + written); fp32 GEMM %d^3: %.1f GFLOP/s"):format(
  bw / 1e9, cfg.mb, g, flops / 1e9))

-- experiments/bench/lua_call.lua: what a call from Lua into C++ costs. Baseline: a bare C
-- function (lt.noop_raw, no trampoline), in the same loop shape and the same run. Per call:
--   raw_c_ns          lt.noop_raw(): LuaJIT's own cost of calling out of compiled code (baseline)
--   cxx_noop_ns       lt.noop(): + the exception trampoline and the Ctrl-C check
--   tensor_method_ns  t:numel(): + the userdata check and method lookup through __index
--   tensor_add_ns     t + 1 on a 1-element tensor: a real ATen op, for scale
--   lua_fn_ns         an empty Lua function, which the JIT inlines (the floor)
-- and each one's ratio to the baseline. `ltrun experiments/bench/lua_call.lua --n=1000000`
local exp = require "lt.study"
local cfg = exp.args{ n = 2000000, repeats = 5 }

local function best_of(fn)  -- the fastest of several repeats: least disturbed by the machine
  local best = math.huge
  for _ = 1, cfg.repeats do
    local t0 = lt.clock()
    fn(cfg.n)
    best = math.min(best, lt.clock() - t0)
  end
  return best / cfg.n * 1e9
end

local function lua_empty() end
local t = lt.zeros(1)
local noop, raw = lt.noop, lt.noop_raw

local results = {
  lua_fn_ns = best_of(function(n) for _ = 1, n do lua_empty() end end),
  raw_c_ns = best_of(function(n) for _ = 1, n do raw() end end),
  cxx_noop_ns = best_of(function(n) for _ = 1, n do noop() end end),
  tensor_method_ns = best_of(function(n) for _ = 1, n do t:numel() end end),
}
local n_add = cfg.n
cfg.n = math.max(1, math.floor(n_add / 20))  -- ATen ops are ~100x slower: fewer iterations
results.tensor_add_ns = best_of(function(n) for _ = 1, n do local _ = t + 1 end end)
cfg.n = n_add

print(("%-18s %10s %10s"):format("call", "ns/call", "x raw C"))
for _, k in ipairs{"lua_fn_ns", "raw_c_ns", "cxx_noop_ns", "tensor_method_ns", "tensor_add_ns"} do
  local ratio = results[k] / results.raw_c_ns
  print(("%-18s %10.1f %10.2f"):format(k, results[k], ratio))
  lt.run.log(k, results[k])
  if k ~= "raw_c_ns" then lt.run.log((k:gsub("_ns$", "_vs_raw_c")), ratio) end
end

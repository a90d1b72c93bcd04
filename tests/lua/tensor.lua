-- tests/lua/tensor.lua: lt.Tensor against values computed by hand.
local T = require "lt.test"

T.case("construction, shape, dtype, device", function()
  local t = lt.tensor{{1, 2, 3}, {4, 5, 6}}
  T.same_table(t.shape, {2, 3})
  T.eq(t.dtype, "float32"); T.eq(t.device, "cpu"); T.eq(t.ndim, 2); T.eq(#t, 2)
  T.eq(t:numel(), 6); T.eq(t:size(1), 3); T.eq(t:size(-1), 3)
  T.same_table(lt.zeros(2, 3).shape, {2, 3})
  T.same_table(lt.ones({4}).shape, {4})
  T.eq(lt.tensor(2, 3).dtype, "float32")
  T.eq(lt.tensor({1, 2}, {dtype = "int64"}).dtype, "int64")
  T.eq(lt.tensor{true, false}.dtype, "bool")
  T.eq(lt.arange(5).dtype, "int64")
  T.same_table(lt.arange(2, 8, 2):totable(), {2, 4, 6})
  T.raises(function() lt.tensor{{1, 2}, {3}} end, "ragged")
  T.raises(function() lt.tensor{1, "a"} end, "numbers, booleans")
  -- a cycle or a table nested past any sensible rank: an error, not a stack overflow
  local cyc = {}; cyc[1] = cyc
  T.raises(function() lt.tensor(cyc) end, "contains itself")
  T.raises(function() lt.tensor{ { cyc } } end, "contains itself")
  local deep = {}
  local t = deep
  for _ = 1, 50000 do t[1] = {}; t = t[1] end
  T.raises(function() lt.tensor(deep) end, "nested deeper than 64")
  T.raises(function() lt.zeros(1):copy(deep) end, "nested deeper than 64")
  local row = {1, 2}
  T.same_table(lt.tensor{row, row}.shape, {2, 2})  -- a shared row is not a cycle
  T.raises(function() lt.zeros(2, {dtype = "float8"}) end, "unknown dtype")
end)

T.case("arithmetic and type promotion like PyTorch", function()
  local a, b = lt.tensor{1, 2, 3}, lt.tensor{4, 5, 6}
  T.same_table((a + b):totable(), {5, 7, 9})
  T.same_table((b - a):totable(), {3, 3, 3})
  T.same_table((a * b):totable(), {4, 10, 18})
  T.same_table((b / 2):totable(), {2, 2.5, 3})
  T.same_table((10 - a):totable(), {9, 8, 7})
  T.same_table((a ^ 2):totable(), {1, 4, 9})
  T.same_table((-a):totable(), {-1, -2, -3})
  local i = lt.tensor({1, 2}, {dtype = "int64"})
  T.eq((i + 1).dtype, "int64")
  T.eq((i + 0.5).dtype, "float32")
  T.same_table(a:gt(1):totable(), {false, true, true})
end)

T.case("reductions, matmul, softmax", function()
  local m = lt.tensor{{1, 2}, {3, 4}}
  T.eq(m:sum(), 10); T.eq(m:mean(), 2.5); T.eq(m:max(), 4); T.eq(m:argmax(), 3)
  T.same_table(m:sum(0):totable(), {4, 6})
  T.same_table(m:sum(1, true).shape, {2, 1})
  local v, idx = m:max(1)
  T.same_table(v:totable(), {2, 4}); T.same_table(idx:totable(), {1, 1})
  T.same_table(m:matmul(m):totable(), {{7, 10}, {15, 22}})
  local p = lt.tensor{0, math.log(3)}:softmax()
  T.near(p[0], 0.25, 1e-6); T.near(p[1], 0.75, 1e-6)  -- fp32: a few roundings of 6e-8
  local vals, ids = lt.tensor{5, 1, 9, 3}:topk(2)
  T.same_table(vals:totable(), {9, 5}); T.same_table(ids:totable(), {2, 0})
  T.near(lt.tensor{3, 4}:norm(), 5, 1e-6)  -- fp32: a rounding or two of 6e-8 relative
  T.near(lt.tensor{1, 2, 3, 4}:std(), math.sqrt(5 / 3), 1e-6)  -- unbiased, as torch
end)

T.case("0-based indexing, negative indices, slices, assignment", function()
  local t = lt.arange(12):view(3, 4)
  T.eq(t[0][0], 0); T.eq(t[2][3], 11); T.eq(t[-1][-1], 11)
  T.same_table(t[1]:totable(), {4, 5, 6, 7})
  T.same_table(t[{":", 1}]:totable(), {1, 5, 9})
  T.same_table(t[{{0, 2}, {1, 3}}]:totable(), {{1, 2}, {5, 6}})
  T.same_table(t[{{}, {0, nil, 2}}]:totable(), {{0, 2}, {4, 6}, {8, 10}})
  T.same_table(t:narrow(1, 1, 2)[0]:totable(), {1, 2})
  T.same_table(t:select(1, -1):totable(), {3, 7, 11})
  T.same_table(t:index_select(0, {2, 0})[{":", 0}]:totable(), {8, 0})
  T.raises(function() return t[3] end, "out of range")
  -- numbers beyond int64 or not integers are refused before they are converted
  T.raises(function() return t[{ { 0, 2 ^ 70 } }] end, "slice stop: 1.18.* is out of range")
  T.raises(function() return t[{ 0.5 }] end, "index: expected an integer")
  T.raises(function() return lt.zeros{ 2, 2 ^ 60 } end, "shape%[2%]: .* is out of range")
  T.raises(function() return t:select(0, 2 ^ 64) end, "argument 3: .* is out of range")
  T.raises(function() return t:sum(2) end, "dimension 2 is out of range")
  local z = lt.zeros(2, 3)
  z[1] = 7
  z[{0, 2}] = 5
  z[{0, {0, 2}}] = lt.tensor{1, 2}
  T.same_table(z:totable(), {{1, 2, 5}, {7, 7, 7}})
end)

T.case("views share storage; clone does not", function()
  local t = lt.zeros(4)
  local v = t:view(2, 2)
  v[0][1] = 3
  T.eq(t[1], 3)
  local c = t:clone(); c[1] = 9
  T.eq(t[1], 3)
end)

T.case("printing", function()
  T.eq(tostring(lt.tensor{1, 2.5}), "tensor([1.0000, 2.5000])")
  T.eq(tostring(lt.tensor({1, 2}, {dtype = "int64"})), "tensor([1, 2])")
end)

T.case("autograd matches the derivative by hand and finite differences", function()
  local x = lt.tensor({0.5, -1.0, 2.0}, {dtype = "float64", requires_grad = true})
  local y = ((x ^ 3):sum() + (x:sin() * 2):sum())
  y:backward()
  local g = x.grad:totable()
  local xs = {0.5, -1.0, 2.0}
  for i = 1, 3 do
    T.near(g[i], 3 * xs[i] ^ 2 + 2 * math.cos(xs[i]), 1e-12)  -- double: a few 1e-16
    local f = function(v) return v ^ 3 + 2 * math.sin(v) end
    local h = 1e-6
    -- central differences: truncation h^2 x f(3) / 6 ~ 1e-12, rounding 1e-16 / h ~ 1e-10
    T.near(g[i], (f(xs[i] + h) - f(xs[i] - h)) / (2 * h), 1e-6)
  end
  local r = lt.no_grad(function() return (x * 2).requires_grad end)
  T.eq(r, false)
  T.eq((x * 2).requires_grad, true)  -- grad mode back on after no_grad
end)

T.case("errors inside C++ become Lua errors with a message", function()
  T.raises(function() return lt.zeros(2, 3):matmul(lt.zeros(2, 3)) end, "mat")
  if not lt.cuda_available() then  -- a CPU-only build refuses the device, naming it
    T.raises(function() return lt.zeros(2):to("cuda") end, "cuda")
  end
  local ok = pcall(function() lt.zeros(2):matmul(lt.zeros(3)) end)
  T.eq(ok, false)
  T.eq(lt.zeros(2):sum(), 0)  -- the state is usable afterwards
end)

T.case("free releases at once and later use says so", function()
  local t = lt.ones(1000)
  local before = lt.memory().tensor_bytes
  t:free()
  T.eq(lt.memory().tensor_bytes, before - 4000)
  T.raises(function() return t:sum() end, "freed")
  T.eq(tostring(t), "tensor(<freed>)")
end)

T.case("the GC is told about tensor bytes", function()
  -- 200 × 4 MiB tensors dropped right away: without byte accounting Lua sees only small
  -- userdata and never collects, so ~800 MiB would stay alive.
  collectgarbage("collect")
  local old = lt.gc_threshold(32 * 2 ^ 20)
  local peak = 0
  for i = 1, 200 do
    local t = lt.zeros(1024 * 1024)
    peak = math.max(peak, lt.memory().tensor_bytes)
  end
  lt.gc_threshold(old)
  T.ok(peak < 80 * 2 ^ 20, ("peak tensor bytes %d should stay near the 32 MiB threshold"):format(peak))
  T.ok(lt.memory().forced_collections > 0, "collections were forced")
end)

T.finish()

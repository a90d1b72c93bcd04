-- tests/lua/json.lua: lt.json round trips and edge cases.
local T = require "lt.test"

T.case("encode", function()
  T.eq(lt.json.encode{1, 2, 3}, "[1,2,3]")
  T.eq(lt.json.encode{b = 1, a = "x"}, '{"a":"x","b":1}')  -- keys sorted: stable output
  T.eq(lt.json.encode{}, "{}")
  T.eq(lt.json.encode(setmetatable({}, lt.json.array_mt)), "[]")
  T.eq(lt.json.encode(0.1), "0.1")
  T.eq(lt.json.encode(3e-5), "3e-05")
  T.eq(lt.json.encode{x = lt.json.null}, '{"x":null}')
  T.eq(lt.json.encode("é\n\"q\""), '"é\\n\\"q\\""')
  T.raises(function() lt.json.encode(0 / 0) end, "not representable")
  T.raises(function() lt.json.encode{f = print} end, "function")
  local cyc = {}; cyc.self = cyc
  T.raises(function() lt.json.encode(cyc) end, "contains itself")
  local arr = {}; arr[1] = arr
  T.raises(function() lt.json.encode{a = {arr}} end, "contains itself")
  local shared = {1, 2}
  T.eq(lt.json.encode{shared, shared}, "[[1,2],[1,2]]")  -- shared, not cyclic
end)

T.case("deep nesting is an error naming the depth, not a crash", function()
  local deep = {}
  local t = deep
  for _ = 1, 50000 do t[1] = {}; t = t[1] end
  T.raises(function() lt.json.encode(deep) end, "nested deeper than 200")
  local ok199 = string.rep("[", 199) .. string.rep("]", 199)
  T.eq(lt.json.encode(lt.json.decode(ok199)), ok199)
  T.raises(function() lt.json.decode(string.rep("[", 70000)) end, "nested deeper than 200")
  T.raises(function() lt.json.decode(string.rep("[", 70000) .. string.rep("]", 70000)) end, "nested deeper")
  T.raises(function() lt.json.decode(string.rep('{"a":', 70000) .. "1" .. string.rep("}", 70000)) end, "nested deeper")
end)

T.case("decode", function()
  local v = lt.json.decode('{"a": [1, 2.5, "s", true, null], "b": {"c": {}}}')
  T.eq(v.a[1], 1); T.eq(v.a[2], 2.5); T.eq(v.a[3], "s"); T.eq(v.a[4], true)
  T.eq(v.a[5], lt.json.null)
  T.eq(type(v.b.c), "table")
  T.eq(lt.json.encode(lt.json.decode("[]")), "[]")
  T.raises(function() lt.json.decode("{bad") end, "parse error")
end)

T.case("round trip", function()
  local src = { name = "run", steps = {1, 2, 3}, cfg = { lr = 3e-5, betas = {0.9, 0.95} }, ok = false }
  T.same_table(lt.json.decode(lt.json.encode(src)), src)
  local pretty = lt.json.encode(src, { pretty = true })
  T.ok(pretty:find("\n  "), "pretty output is indented")
end)

T.finish()

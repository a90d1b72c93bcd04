-- tests/lua/seed_streams.lua: runtime/core/run_context.h's kSeedStreams is the complete list of
-- the run's seed streams: every stream the sources take (C++ `stream("NAME")` in runtime/, Lua
-- `lt.run.seed("NAME"...)` in lib/ and experiments/) is listed, and every listed one is taken.
-- And lt.run.seed(NAME, I), the I-th seed of a stream, in place of arithmetic on a stream's seed.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$")

local read = T.read

-- every file under dir whose name ends in one of `exts`
local function files(dir, exts, out)
  out = out or {}
  for _, e in ipairs(lt.fs.list(dir)) do
    local p = dir .. "/" .. e
    if lt.fs.is_dir(p) then files(p, exts, out)
    else
      for _, x in ipairs(exts) do if e:sub(-#x) == x then out[#out + 1] = p end end
    end
  end
  return out
end

T.case("kSeedStreams lists exactly the streams the sources take", function()
  local header = read(root .. "/runtime/core/run_context.h")
  local list = header:match("kSeedStreams%[%]%s*=%s*(%b{})")
  T.ok(list, "kSeedStreams in run_context.h")
  local listed = {}
  for line in list:gmatch("[^\n]+") do
    local name = line:gsub("//.*$", ""):match('"([^"]+)"')
    if name then listed[name] = true end
  end
  local used, where = {}, {}
  local function take(name, file)
    used[name] = true
    where[name] = where[name] or file:sub(#root + 2)
  end
  for _, f in ipairs(files(root .. "/runtime", { ".cpp", ".h" })) do
    for name in read(f):gmatch('stream%("([^"]+)"%)') do take(name, f) end
  end
  for _, dir in ipairs{ "lib", "experiments" } do
    for _, f in ipairs(files(root .. "/" .. dir, { ".lua" })) do
      for name in read(f):gmatch('lt%.run%.seed%("([^"]+)"') do take(name, f) end
    end
  end
  T.ok(next(used) ~= nil and used["train.order"] and used["eval.subset"], "the grep finds streams in C++ and Lua")
  for name, file in pairs(where) do
    T.ok(listed[name], ("stream %q (%s) is missing from kSeedStreams"):format(name, file))
  end
  for name in pairs(listed) do T.ok(used[name], ("kSeedStreams lists %q, which no source takes"):format(name)) end
end)

T.case("lt.run.seed(NAME, I): the I-th seed of a stream, well mixed", function()
  local s = lt.run.seed("rl.rollout")
  local a, b = lt.run.seed("rl.rollout", 1), lt.run.seed("rl.rollout", 2)
  T.eq(lt.run.seed("rl.rollout", 1), a)  -- repeats
  T.ok(a ~= b and a ~= s and b ~= s, "distinct per index and from the stream's own seed")
  T.ok(a ~= s + 1 and b - a ~= 1, "not the stream's seed plus the index")
  T.ok(a ~= lt.run.seed("eval.repeat", 1), "another stream, another seed")
  for _, x in ipairs{ a, b, lt.run.seed("eval.repeat", 1000) } do
    T.ok(x >= 0 and x < 2 ^ 53 and x == math.floor(x), "an integer below 2^53")
  end
  T.raises(function() lt.run.seed("eval", 1.5) end, "lt%.run%.seed")
end)

T.finish()

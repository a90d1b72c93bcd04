-- tests/lua/args.lua: --key=value parsing and merging into defaults (lt.args, lt.experiment).
local T = require "lt.test"
local args = require "lt.args"
local exp = require "lt.experiment"

T.case("parse", function()
  local o, pos = args.parse{"--steps=10", "--lr=3e-5", "--name=abc", "--fast", "--no-cuda", "--max-len=7", "file.txt"}
  T.eq(o.steps, 10); T.eq(o.lr, 3e-5); T.eq(o.name, "abc"); T.eq(o.fast, true); T.eq(o.cuda, false)
  T.eq(o.max_len, 7); T.same_table(pos, {"file.txt"})
  T.eq(args.parse{"--x=true"}.x, true)
  T.eq(args.parse{"--x=1e3"}.x, 1000)
  T.eq(args.parse{"--x=inf"}.x, "inf")  -- only numerals become numbers
end)

T.case("merge converts to the defaults' types and rejects unknown keys", function()
  local cfg = args.merge({steps = 200, model = "tiny", fast = false}, {steps = 5, model = 42})
  T.eq(cfg.steps, 5); T.eq(cfg.model, "42"); T.eq(cfg.fast, false)
  T.raises(function() args.merge({steps = 1}, {stpes = 2}) end, "unknown option %-%-stpes %(known: steps%)")
  T.raises(function() args.merge({steps = 1}, {steps = "many"}) end, "expects a number")
  T.raises(function() args.merge({fast = false}, {fast = 3}) end, "true or false")
end)

T.case("exp.args reads the script's arguments and records them as params", function()
  local cfg = exp.args({steps = 200, lr = 0.1}, {"--steps=3"})
  T.eq(cfg.steps, 3); T.eq(cfg.lr, 0.1)
  local rows = lt.run.query("SELECT key, value FROM params WHERE run_id = ? ORDER BY key", lt.run.id())
  T.eq(#rows, 2); T.eq(rows[1].key, "lr"); T.eq(rows[1].value, "0.1"); T.eq(rows[2].value, "3")
end)

T.case("exp.sorted iterates in key order", function()
  local seen = {}
  for k in exp.sorted{c = 1, a = 2, b = 3} do seen[#seen + 1] = k end
  T.same_table(seen, {"a", "b", "c"})
end)

T.finish()

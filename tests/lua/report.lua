-- tests/lua/report.lua: lt.report against hand-made values: the table (formats, n/a, the CSV
-- it writes), paired comparisons (items up and down, the exact sign test by hand), one colour
-- per plan across figures, the results table of child runs from the store.
local T = require "lt.test"
local report = require "lt.report"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_report"
lt.fs.remove(tmp)
lt.fs.mkdir(tmp)

T.case("a table: header, formats, n/a for missing and NaN, CSV of the raw values", function()
  local text = report.table{ columns = { { "plan", "%-6s" }, { "loss", "%7.3f", head = "val" }, { "n", "%3d" } },
                             rows = { { plan = "full", loss = 1.23456, n = 4 }, { plan = "base", loss = 0 / 0 } },
                             csv = tmp .. "/t.csv" }
  T.eq(text, "plan       val   n\nfull     1.235   4\nbase       n/a n/a")
  T.eq(T.read(tmp .. "/t.csv"), 'plan,loss,n\n"full",1.23456,4\n"base",,\n')
  -- flags: a signed, zero-padded or left-justified number column prints n/a in its width (a
  -- base with no old-domain text left freeze_deep's "old +/-" (%+7.3f) empty and crashed it)
  local t2 = report.table{ columns = { { "d", "%+7.3f" }, { "z", "%05d" }, { "l", "%-6.1f" } },
                           rows = { { d = 0.5, z = 7, l = 2 }, {} } }
  T.eq(t2, "      d     z l     \n +0.500 00007 2.0   \n    n/a   n/a n/a   ")
end)

T.case("paired: items up and down, the two-sided sign test by hand", function()
  local before = { true, false, false, false, false, false, true, true }
  local after = { true, true, true, true, true, true, false, true }
  local up, down, p = report.paired("t", before, after)
  T.eq(up, 5); T.eq(down, 1)
  -- 6 changed items, 1 the rarer way: p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14/64
  T.near(p, 14 / 64, 1e-12)
  -- counts per item (k sampled answers right): up when more are right
  up, down = report.paired("k", { 0, 3, 2 }, { 1, 3, 1 })
  T.eq(up, 1); T.eq(down, 1)
  T.raises(function() report.paired("x", { true }, {}) end, "1 items before, 0 after")
end)

T.case("one colour per plan, in every figure given the same colours; no state in the module", function()
  local colours = report.colours{ "base", "full" }
  local a = T.read(report.curves(tmp .. "/c.svg", { title = "c", series = { full = { 3, 2, 1 }, extra = { 1, 1, 1 } },
                                                    colours = colours }))
  local b = T.read(report.scores(tmp .. "/s.svg", { title = "s", scores = { base = { acc = 0.5, by_category = {} },
                                                                             full = { acc = 0.7, by_category = {} } },
                                                    chance = 0.25, colours = colours }))
  local full = colours:of("full")
  T.ok(full ~= colours:of("base") and full ~= colours:of("extra"), "distinct colours")
  -- the order given fixes the colours, whatever another study's figures drew before
  T.eq(report.colours{ "base", "full" }:of("full"), full)
  T.ok(report.colours{ "full" }:of("full") ~= full, "a fresh colours object starts at the first colour")
  T.eq(report.colour, nil)  -- (module-global colours are gone)
  T.ok(a:find('stroke="' .. full .. '"', 1, true), "the curve of full in its colour")
  T.ok(b:find('fill="' .. full .. '"><title>full,', 1, true), "the bar of full in the same colour")
  T.ok(b:find(">chance<", 1, true), "the chance line")
end)

T.case("figures check their options first: a wrong shape names the option", function()
  local f = tmp .. "/bad.svg"
  T.raises(function() report.curves(f, { series = { full = { loss = { 3, 2 } } } }) end,
           "report.curves: series.full: expected a list of numbers, got a table with keys loss")
  T.raises(function() report.curves(f, { series = { { 3, 2, 1 } } }) end,
           "report.curves: series: expected values by name, { full = { 3.1, 2.7 } }, got a list")
  T.raises(function() report.curves(f, { series = { full = 3 } }) end, "report.curves: series.full: expected a list of numbers, got a number %(3%)")
  T.raises(function() report.curves(f, { series = { full = { 3, "x" } } }) end, "report.curves: series.full%[2%]: expected a number")
  T.raises(function() report.curves(f, { series = {} }) end, "report.curves: series: expected { NAME = { value, ... }, ... }, got an empty table")
  T.raises(function() report.curves(f, { values = { 1 } }) end, "report.curves: unknown option 'values'")
  T.raises(function() report.curves(f, { series = { a = { 1 } }, smooth = 0 }) end, "report.curves: smooth: expected")
  T.raises(function() report.curves(f, { series = { a = { 1 } }, order = "a" }) end, "report.curves: order: expected a list")
  T.raises(function() report.curves({ series = { a = { 1 } } }) end, "report.curves: expected %(path, { options }%)")
  T.raises(function() report.profile(f, { series = { a = "1,2" } }) end, "report.profile: series.a: expected a list of numbers")
  T.ok(not lt.fs.exists(f), "nothing drawn")
end)

T.case("a results table of child runs from the store", function()
  for i, name in ipairs{ "a", "b" } do
    lt.run.child(name, function()
      lt.run.param("lr", i / 10)
      lt.run.log("loss", 5, { step = 1 })
      lt.run.log("loss", i, { step = 2 })
    end)
  end
  local rows = report.runs{ params = { "lr" }, metrics = { "loss" } }
  T.eq(#rows, 2)
  T.eq(rows[1].name, "a"); T.eq(rows[1].status, "ok"); T.eq(rows[1].lr, "0.1"); T.eq(rows[1].loss, 1)
  T.eq(rows[2].name, "b"); T.eq(rows[2].loss, 2)
end)

T.finish()

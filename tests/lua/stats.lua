-- tests/lua/stats.lua: lt.stats from Lua (arrays and tensors, NaN for undefined cases,
-- errors naming the argument), against hand-computed values (see tests/stats/test_stats.cpp).
local T = require "lt.test"

-- double arithmetic over a handful of terms: a few roundings of 1.1e-16, so 1e-12 holds the
-- sums; the p-values go through a t distribution's incomplete beta, a continued fraction
-- stopped at 1e-15 relative (runtime/stats): a few of those and roundings stay far below 1e-10
T.case("lt.stats from Lua: rank, spearman, pearson, jaccard", function()
  T.same_table(lt.stats.rank{ 10, 20, 20, 30 }, { 1, 2.5, 2.5, 4 })
  local r, p, n = lt.stats.spearman({ 1, 2, 3, 4, 5 }, { 2, 1, 4, 3, 5 })
  T.near(r, 0.8, 1e-12)
  T.near(p, 0.10408803866182788, 1e-10)  -- by hand: see tests/stats/test_stats.cpp
  T.eq(n, 5)
  local pr, pp = lt.stats.pearson(lt.tensor{ 1, 2, 3 }, { 1, 3, 2 })
  T.near(pr, 0.5, 1e-12)
  T.near(pp, 2 / 3, 1e-10)
  local cr = lt.stats.pearson({ 1, 1, 1 }, { 1, 2, 3 })
  T.ok(cr ~= cr, "a constant sample gives NaN")
  T.raises(function() lt.stats.spearman({ 1, 2 }, { 1, 2, 3 }) end, "2 and 3")
  T.raises(function() lt.stats.rank{ 1, "x" } end, "argument 1%[2%]: expected a number, got string")
  T.near(lt.stats.jaccard({ "a", "b", "c" }, { b = true, c = true, d = true }), 0.5, 1e-12)
  -- sign test: n = 15, k = 2: 2 (1 + 15 + 105) / 2^15
  T.near(lt.stats.sign_test(2, 13), 2 * 121 / 32768, 1e-12)
  T.eq(lt.stats.sign_test(0, 0), 1)
  T.raises(function() lt.stats.sign_test(-1, 2) end, "up %-1")
end)

T.finish()

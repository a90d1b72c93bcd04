-- tests/lua/layers.lua: lt.layers.parse / lt.layers.spec, the one grammar of "which blocks" that
-- every study's block-selection arg takes (--train_only, --layers, --split's plans): each term
-- against block lists worked out by hand, each mistake's whole message, and the specs on a model.
local T = require "lt.test"

local parse = lt.layers.parse

-- the whole error message of fn (a mistake names the arg, its text and the term)
local function message(fn)
  local ok, err = pcall(fn)
  T.ok(not ok, "expected an error")
  return tostring(err)
end

T.case("terms, on 8 blocks", function()
  T.same_table(parse(8, "all"), { 0, 1, 2, 3, 4, 5, 6, 7 })
  T.same_table(parse(8, "3"), { 3 })
  T.same_table(parse(8, 3), { 3 })                -- a number arg's value
  T.same_table(parse(8, "-1"), { 7 })              -- from the end
  T.same_table(parse(8, "-8"), { 0 })
  T.same_table(parse(8, "5,0,3"), { 0, 3, 5 })     -- sorted
  T.same_table(parse(8, "2-4,7,3"), { 2, 3, 4, 7 }) -- no duplicates
  T.same_table(parse(8, "4--1"), { 4, 5, 6, 7 })   -- a range to the last block
  T.same_table(parse(8, "-3--2"), { 5, 6 })
  T.same_table(parse(8, " 0 , 2 "), { 0, 2 })      -- spaces around terms
  T.same_table(parse(8, "middle:2"), { 3, 4 })     -- first = floor((8 - 2) / 2)
  T.same_table(parse(7, "middle:3"), { 2, 3, 4 })
  T.same_table(parse(8, "middle:8"), { 0, 1, 2, 3, 4, 5, 6, 7 })
  T.same_table(parse(8, "shallow:0.5"), { 0, 1, 2, 3 })
  T.same_table(parse(8, "deep:0.5"), { 4, 5, 6, 7 })
  T.same_table(parse(8, "shallow:0.3"), { 0, 1 })  -- round(2.4) = 2
  T.same_table(parse(8, "deep:0.3"), { 2, 3, 4, 5, 6, 7 })
  T.same_table(parse(8, "shallow:0"), {})          -- nothing: a plan that trains no block
  T.same_table(parse(8, "deep:1"), {})
  T.same_table(parse(8, "middle:2,-1,0"), { 0, 3, 4, 7 })
  -- shallow:F and deep:F split the blocks at one point, for every F
  for _, f in ipairs{ 0, 0.1, 0.25, 1 / 3, 0.5, 0.6, 0.9, 1 } do
    local s, d = parse(9, "shallow:" .. f), parse(9, "deep:" .. f)
    T.eq(#s + #d, 9, "shallow + deep at " .. f)
    T.ok(#s == 0 or #d == 0 or s[#s] + 1 == d[1], "adjacent at " .. f)
  end
end)

T.case("mistakes name the arg, its text and the term", function()
  T.eq(message(function() parse(8, "9", "--train_only") end),
       "--train_only=9: '9' names block 9, outside 0..7 (8 blocks)")
  T.eq(message(function() parse(8, "-9", "--layers") end),
       "--layers=-9: '-9' names block -9, outside -8..-1 (8 blocks)")
  T.eq(message(function() parse(8, "0,x", "--layers") end),
       "--layers=0,x: 'x' is not a term (all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas)")
  T.eq(message(function() parse(8, "4-2", "--layers") end),
       "--layers=4-2: '4-2' runs backwards (block 4 to block 2)")
  T.eq(message(function() parse(8, "2-9", "--layers") end),
       "--layers=2-9: '2-9' names block 9, outside 0..7 (8 blocks)")
  T.eq(message(function() parse(8, "middle:9", "--train_only") end),
       "--train_only=middle:9: 'middle:9' wants a whole number of blocks K from 1 to 8")
  T.eq(message(function() parse(8, "middle:x", "--train_only") end),
       "--train_only=middle:x: 'middle:x' wants a whole number of blocks K from 1 to 8")
  T.eq(message(function() parse(8, "middle:0", "--train_only") end),
       "--train_only=middle:0: 'middle:0' wants a whole number of blocks K from 1 to 8")
  T.eq(message(function() parse(8, "shallow:1.5", "--plan") end),
       "--plan=shallow:1.5: 'shallow:1.5' wants a share F from 0 to 1")
  T.eq(message(function() parse(8, "deep:half", "--plan") end),
       "--plan=deep:half: 'deep:half' wants a share F from 0 to 1")
  T.eq(message(function() parse(8, "top:2", "--layers") end),
       "--layers=top:2: 'top:2' is not a term (all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas)")
  T.eq(message(function() parse(8, "", "--layers") end),
       "--layers=: '' is empty: expected all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas")
  T.eq(message(function() parse(8, "0,,2", "--layers") end),
       "--layers=0,,2: '' is empty: expected all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas")
  T.eq(message(function() parse(8, "1.5") end),
       "layers=1.5: '1.5' is not a term (all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas)")
  T.raises(function() parse("x", "0") end, "lt%.layers%.parse: argument 1: expected a model or a number of blocks")
  T.raises(function() parse(8, true, "--layers") end, "lt%.layers%.parse: %-%-layers: expected text")
end)

-- issue 43 item 7: numbers that are no block were taken for another block (%d: 1.5 was block 1;
-- 2^63, 1e308, NaN and inf were block -9223372036854775808), deep:nan passed as a share, and a
-- term was trimmed in quadratic time (2.7 s for 40 KB)
T.case("numbers that are no block, and shares that are no number, are named as given", function()
  local terms = "(all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas)"
  T.eq(message(function() parse(8, "9223372036854775807", "--layers") end),
       "--layers=9223372036854775807: '9223372036854775807' names block 9223372036854775807, outside 0..7 (8 blocks)")
  T.eq(message(function() parse(8, "-9223372036854775808", "--layers") end),
       "--layers=-9223372036854775808: '-9223372036854775808' names block -9223372036854775808, outside -8..-1 (8 blocks)")
  T.eq(message(function() parse(8, 9223372036854775807, "--layers") end),  -- a number: 2^63
       "--layers=9223372036854775808: '9223372036854775808' names block 9223372036854775808, outside 0..7 (8 blocks)")
  for _, v in ipairs{ { 1e308, "1e+308" }, { 0 / 0, "nan" }, { math.huge, "inf" }, { -math.huge, "-inf" }, { 1.5, "1.5" } } do
    T.eq(message(function() parse(8, v[1], "--layers") end), ("--layers=%s: '%s' is not a term %s"):format(v[2], v[2], terms))
  end
  for _, t in ipairs{ "1e308", "nan", "inf", "0x1", "1.5" } do
    T.eq(message(function() parse(8, t, "--layers") end), ("--layers=%s: '%s' is not a term %s"):format(t, t, terms))
  end
  for _, t in ipairs{ "deep:nan", "shallow:nan", "deep:inf", "deep:-inf", "deep:0x1", "deep:1e999", "deep:" } do
    T.eq(message(function() parse(8, t, "--layers") end), ("--layers=%s: '%s' wants a share F from 0 to 1"):format(t, t))
  end
  for _, t in ipairs{ "middle:nan", "middle:0x2", "middle:inf" } do
    T.eq(message(function() parse(8, t, "--layers") end),
         ("--layers=%s: '%s' wants a whole number of blocks K from 1 to 8"):format(t, t))
  end
  T.same_table(parse(8, "deep:.5"), { 4, 5, 6, 7 })   -- decimal forms still read
  -- without a model: the same mistakes, less the ranges a model's blocks would make
  T.eq(lt.layers.check("0,3,-1,4--1,-3--2,2-9,middle:200,shallow:0.5,deep:1,all"), true)
  T.eq(message(function() lt.layers.check("0,deep:nan", "--layers") end), "--layers=0,deep:nan: 'deep:nan' wants a share F from 0 to 1")
  T.eq(message(function() lt.layers.check("middle:0", "--layers") end),
       "--layers=middle:0: 'middle:0' wants a whole number of blocks K, 1 or more")
  T.eq(message(function() lt.layers.check("5-2", "--layers") end), "--layers=5-2: '5-2' runs backwards (block 5 to block 2)")
  T.eq(message(function() lt.layers.check("-1--3", "--layers") end), "--layers=-1--3: '-1--3' runs backwards (block -1 to block -3)")
  T.eq(lt.layers.check("-1-3"), true)  -- block 7 to 3 of 8, or 1 to 3 of 2: known only with the model
  T.eq(message(function() lt.layers.check(0 / 0, "--layers") end), ("--layers=nan: 'nan' is not a term %s"):format(terms))
  T.raises(function() lt.layers.check(true, "--layers") end, "lt%.layers%.check: %-%-layers: expected text")
  T.same_table(parse(8, "shallow:5e-1"), { 0, 1, 2, 3 })
end)

-- A term of 40 KB (a block number, 40,000 spaces, a letter) is trimmed in one pass. The bound
-- comes from the linear cost, measured here on the same text: the parse must not take more
-- than 200 times one scan of it by a pattern (a handful of scans is what it does), plus 50 ms
-- for a slow or busy machine. The quadratic trim took 2.7 s to 4.7 s: 10,000 scans and more.
T.case("a long term is trimmed in linear time", function()
  local term = "1" .. (" "):rep(40000) .. "x"
  local t0 = os.clock()
  for _ = 1, 10 do assert(term:find("%a") == #term) end  -- a pattern's scan of the whole text, 10 times
  local scan = (os.clock() - t0) / 10
  t0 = os.clock()
  local ok, err = pcall(parse, 8, term, "--layers")
  local took = os.clock() - t0
  T.ok(took < 200 * scan + 0.05, ("parse of a 40 KB term: %.4f s, one scan %.6f s"):format(took, scan))
  T.ok(not ok and tostring(err):find("is not a term", 1, true), tostring(err):sub(1, 80))
  T.ok(#tostring(err) < 400, "the message shows the term by its start and length")  -- not 80 KB of it
  T.same_table(parse(8, (" "):rep(40000) .. "3" .. (" "):rep(40000)), { 3 })
  T.eq(message(function() parse(8, (" "):rep(40000) .. ",1", "--layers") end),
       "--layers=" .. (" "):rep(80) .. "... (40002 characters): '' is empty: expected all, 3, -1, 10-15, middle:K, "
       .. "shallow:F, deep:F, joined by commas")
end)

T.case("specs on a model: all is the whole model, the rest its blocks", function()
  local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_layers_model"
  os.execute("rm -rf '" .. tmp .. "'")
  lt.model.new{ out = tmp, layers = 4, hidden = 16, heads = 2, kv_heads = 1, vocab = 300 }
  local m = lt.model.load(tmp)
  T.same_table(parse(m, "-1"), { 3 })  -- a model's blocks
  T.eq(lt.layers.spec(m, "all"), "all")
  T.same_table(lt.layers.spec(m, "middle:2"), { layers = { 1, 2 } })
  local total = m:train_only(lt.layers.spec(m, "all")):n_trainable()
  local one = m:train_only(lt.layers.spec(m, "1")):n_trainable()
  T.ok(one > 0 and 4 * one < total, "all trains the embeddings and head besides the blocks")
  T.eq(m:train_only(lt.layers.spec(m, "0,3")):n_trainable(), 2 * one)
  T.eq(m:train_only(lt.layers.spec(m, "middle:2")):n_trainable(), 2 * one)
  T.eq(m:train_only(lt.layers.spec(m, "shallow:0.75")):n_trainable(), 3 * one)
  T.raises(function() lt.layers.spec(m, "deep", "--train_only") end, "%-%-train_only=deep: 'deep' is not a term")
  m:free()
end)

T.finish()

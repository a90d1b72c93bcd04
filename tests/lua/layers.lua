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

-- lt/layers.lua: the Lua half of lt.layers: the one text grammar for "which blocks", that every
-- study's block-selection arg takes (--train_only, --layers, the plans of --split), parsed here
-- once. The C++ half (runtime/train/script.cpp, bindings/train.cpp) makes freeze specs:
-- lt.layers.shallow / deep / range / middle / all / union / attention / mlp / norms / describe /
-- names; this file returns lt.layers.parse and lt.layers.spec, which the prelude puts on the same
-- table (lib/lt/init.lua, where lt is assembled), and the terms below mean what those functions
-- mean.
--
--   all         every block
--   3           block 3 (0 the first, as in model.layers.N); -1 the last, -2 the one before ...
--   10-15       blocks 10 to 15; either end may count from the end: 4--1 is block 4 to the last
--   middle:K    the K middle blocks (lt.layers.middle: the first is floor((N - K) / 2))
--   shallow:F   the first round(F N) blocks (lt.layers.shallow: F is the shallow share)
--   deep:F      the rest, blocks round(F N) .. N - 1 (lt.layers.deep): shallow:F's complement
--   a,b,...     the union of terms: 0,3,5 or 0,4-6 or middle:2,-1
--
-- A mistake is an error naming the arg, its text and the term: `--layers=0,x: 'x' is not a term
-- (all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas)`, `--train_only=9: block 9
-- is outside 0..7 (8 blocks)`.
local layers = setmetatable({}, { __index = lt.layers })  -- its own two, over the C++ half

local terms = "all, 3, -1, 10-15, middle:K, shallow:F, deep:F, joined by commas"

-- a decimal number ("0.5", ".5", "1", "5e-1"); nil for anything else: "0x1", "nan", "inf", "1_0"
local function decimal(s)
  if not (s:match("^[-+]?%d+%.?%d*$") or s:match("^[-+]?%.%d+$") or s:match("^[-+]?%d+%.?%d*[eE][-+]?%d+$")
          or s:match("^[-+]?%.%d+[eE][-+]?%d+$")) then
    return nil
  end
  return tonumber(s)
end

-- the number of blocks of a model (anything with n_layers) or a number
local function count(m, fn)
  local n = type(m) == "number" and m or (type(m) == "table" or type(m) == "userdata") and m.n_layers
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
    error(("%s: argument 1: expected a model or a number of blocks, got %s"):format(fn, tostring(m)), 3)
  end
  return n
end

-- the block numbers `text` selects in a model of n blocks, as a set; n nil: the terms are only
-- checked (numbers, shares, ranges; not against a model). fn: the function, for messages.
local function read(n, text, name, fn)
  name = name or "layers"
  -- a number arg's value: a whole number as its digits (then a block, in range or not); 1.5,
  -- 1e308, NaN and inf as Lua writes them, which no term matches (before, %d made 1.5 block 1,
  -- and 2^63, 1e308, NaN and inf block -9223372036854775808)
  if type(text) == "number" then
    local v = text
    if v ~= v then text = "nan"
    elseif v == math.floor(v) and math.abs(v) < 1e21 then text = ("%.0f"):format(v)
    else text = tostring(v) end
  end
  if type(text) ~= "string" then
    error(("%s: %s: expected text (%s), got %s"):format(fn, name, terms, type(text)), 3)
  end
  -- (a text or term of more than 100 characters shown by its first 80 and its length)
  local function short(s) return #s > 100 and ("%s... (%d characters)"):format(s:sub(1, 80), #s) or s end
  local function bad(term, why) error(("%s=%s: '%s' %s"):format(name, short(text), short(term), why), 0) end
  local seen = {}
  -- s: digits with an optional '-', named as written (a number past 2^53 is out of range anyway)
  local function block(term, s)
    local l = tonumber(s)
    if not n then return l end
    local i = l < 0 and n + l or l
    if i < 0 or i >= n then
      bad(term, ("names block %s, outside %s (%d blocks)"):format(s, l < 0 and ("-" .. n .. "..-1") or ("0.." .. n - 1), n))
    end
    return i
  end
  local function fraction(term, s)
    local f = decimal(s)
    if not (f and f >= 0 and f <= 1) then bad(term, "wants a share F from 0 to 1") end
    return f
  end
  local function add(set)
    for _, l in ipairs(set.layers or set) do seen[l] = true end
  end
  if text:match("^%s*$") then bad(text, ("is empty: expected %s"):format(terms)) end
  for raw in (text .. ","):gmatch("([^,]*),") do
    -- trimmed in one pass (a lazy "(.-)%s*$" retried the tail at every character: 2.7 s for 40 KB)
    local first = raw:find("%S")
    local term = first and raw:match("^.*%S", first) or ""
    local kind, arg = term:match("^(%a+):(.*)$")
    local a, b = term:match("^(%-?%d+)%-(%-?%d+)$")
    if term == "" then bad(term, ("is empty: expected %s"):format(terms))
    elseif term == "all" then for l = 0, (n or 0) - 1 do seen[l] = true end
    elseif term:match("^%-?%d+$") then seen[block(term, term)] = true
    elseif a then
      local lo, hi = block(term, a), block(term, b)
      -- (without a model, only a range whose ends count the same way is known to run backwards)
      if lo > hi and (n or (lo < 0) == (hi < 0)) then
        bad(term, ("runs backwards (block %d to block %d)"):format(lo, hi))
      end
      for l = lo, n and hi or lo - 1 do seen[l] = true end
    elseif kind == "middle" then
      local k = decimal(arg)
      if not (k and k == math.floor(k) and k >= 1 and k <= (n or math.huge)) then
        bad(term, n and ("wants a whole number of blocks K from 1 to %d"):format(n) or "wants a whole number of blocks K, 1 or more")
      end
      if n then add(layers.middle(n, k)) end
    elseif kind == "shallow" or kind == "deep" then
      local f = fraction(term, arg)
      if n then add(layers[kind](n, f)) end
    else bad(term, ("is not a term (%s)"):format(terms)) end
  end
  return seen
end

-- lt.layers.parse(m_or_n, text[, name]) → the sorted block numbers `text` selects in a model of
-- N blocks (no duplicates). name: the arg, for messages ("--layers"; default "layers").
function layers.parse(m, text, name)
  local out = {}
  for l in pairs(read(count(m, "lt.layers.parse"), text, name, "lt.layers.parse")) do out[#out + 1] = l end
  table.sort(out)
  return out
end

-- lt.layers.check(text[, name]) → true when `text` is in the grammar, with its numbers whole
-- and its shares from 0 to 1, before any model is there (a study's arg with `layers = true`,
-- lt.study: --layers=deep:nan is a usage error before the model is made); the same errors as
-- lt.layers.parse, less those that need the model's blocks.
function layers.check(text, name)
  read(nil, text, name, "lt.layers.check")
  return true
end

-- lt.layers.spec(m, text[, name]) → the freeze spec of `text` for m:train_only / m:freeze: "all"
-- alone is the named part "all" (every parameter, embeddings and head included: full
-- fine-tuning, as m:train_only("all")); anything else the blocks it parses to.
function layers.spec(m, text, name)
  if text == "all" then return "all" end
  return { layers = layers.parse(m, text, name) }
end

return layers

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

-- the number of blocks of a model (anything with n_layers) or a number
local function count(m, fn)
  local n = type(m) == "number" and m or (type(m) == "table" or type(m) == "userdata") and m.n_layers
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
    error(("%s: argument 1: expected a model or a number of blocks, got %s"):format(fn, tostring(m)), 3)
  end
  return n
end

-- lt.layers.parse(m_or_n, text[, name]) → the sorted block numbers `text` selects in a model of
-- N blocks (no duplicates). name: the arg, for messages ("--layers"; default "layers").
function layers.parse(m, text, name)
  local n = count(m, "lt.layers.parse")
  name = name or "layers"
  if type(text) == "number" then text = ("%d"):format(text) end
  if type(text) ~= "string" then
    error(("lt.layers.parse: %s: expected text (%s), got %s"):format(name, terms, type(text)), 2)
  end
  local function bad(term, why) error(("%s=%s: '%s' %s"):format(name, text, term, why), 0) end
  local seen = {}
  local function block(term, s)
    local l = tonumber(s)
    local i = l < 0 and n + l or l
    if i < 0 or i >= n then
      bad(term, ("names block %d, outside %s (%d blocks)"):format(l, l < 0 and ("-" .. n .. "..-1") or ("0.." .. n - 1), n))
    end
    return i
  end
  local function fraction(term, s)
    local f = tonumber(s)
    if not f or f < 0 or f > 1 then bad(term, "wants a share F from 0 to 1") end
    return f
  end
  local function add(set)
    for _, l in ipairs(set.layers or set) do seen[l] = true end
  end
  if text:match("^%s*$") then bad(text, ("is empty: expected %s"):format(terms)) end
  for raw in (text .. ","):gmatch("([^,]*),") do
    local term = raw:match("^%s*(.-)%s*$")
    local kind, arg = term:match("^(%a+):(.*)$")
    local a, b = term:match("^(%-?%d+)%-(%-?%d+)$")
    if term == "" then bad(term, ("is empty: expected %s"):format(terms))
    elseif term == "all" then for l = 0, n - 1 do seen[l] = true end
    elseif term:match("^%-?%d+$") then seen[block(term, term)] = true
    elseif a then
      local lo, hi = block(term, a), block(term, b)
      if lo > hi then bad(term, ("runs backwards (block %d to block %d)"):format(lo, hi)) end
      for l = lo, hi do seen[l] = true end
    elseif kind == "middle" then
      local k = tonumber(arg)
      if not (k and k == math.floor(k) and k >= 1 and k <= n) then
        bad(term, ("wants a whole number of blocks K from 1 to %d"):format(n))
      end
      add(layers.middle(n, k))
    elseif kind == "shallow" then add(layers.shallow(n, fraction(term, arg)))
    elseif kind == "deep" then add(layers.deep(n, fraction(term, arg)))
    else bad(term, ("is not a term (%s)"):format(terms)) end
  end
  local out = {}
  for l in pairs(seen) do out[#out + 1] = l end
  table.sort(out)
  return out
end

-- lt.layers.spec(m, text[, name]) → the freeze spec of `text` for m:train_only / m:freeze: "all"
-- alone is the named part "all" (every parameter, embeddings and head included: full
-- fine-tuning, as m:train_only("all")); anything else the blocks it parses to.
function layers.spec(m, text, name)
  if text == "all" then return "all" end
  return { layers = layers.parse(m, text, name) }
end

return layers

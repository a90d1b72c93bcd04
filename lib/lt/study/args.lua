-- lt/study/args.lua: command-line arguments of a script (`ltrun s.lua --steps=10 --fast`) into a
-- table, and merging them into defaults with the defaults' types.
local M = {}

-- A number as the command line writes one: decimal, with an optional sign, point and exponent
-- ("12", "-3", "0.5", ".5", "3e-4"); nil for anything else ("0x10", "nan", "inf", "1_000", "").
-- The value may still be inf ("1e999"): the arg's check says what range it takes.
function M.number(text)
  if type(text) ~= "string" then return nil end
  for _, form in ipairs { "^[-+]?%d+%.?%d*$", "^[-+]?%.%d+$", "^[-+]?%d+%.?%d*[eE][-+]?%d+$", "^[-+]?%.%d+[eE][-+]?%d+$" } do
    if text:match(form) then return tonumber(text) end
  end
  return nil
end

-- Is v a whole number below 2^53, where every whole number a text names is the double it
-- parses to? An integer arg takes only those: 1e99 is whole, but no count or step of it is, and
-- 9007199254740993 would be read as 9007199254740992.
function M.whole(v)
  return type(v) == "number" and v == math.floor(v) and math.abs(v) < 2^53
end

-- text without the spaces around it (in one pass, whatever its length)
function M.trim(text)
  local first = text:find("%S")
  return first and text:match("^.*%S", first) or ""
end

-- "true"/"false" → boolean, decimal numbers (M.number, spaces around allowed) → number,
-- anything else stays a string (a number arg then says it expected one)
function M.coerce(v)
  if v == "true" then return true end
  if v == "false" then return false end
  local n = M.number(M.trim(v))
  if n ~= nil then return n end
  return v
end

-- the text each --key=value of a parse gave, by the table parse returned (weak keys): a study's
-- check reads an arg from what was typed (M.text), so that a text arg keeps "007" or "1e1" and
-- a message shows --steps=1e99, not the number it became
local typed = setmetatable({}, { __mode = "k" })
function M.text(opts, key)
  local t = typed[opts]
  return t and t[key]
end

-- parse{"--a=1", "--flag", "--no-x", "pos"} → {a=1, flag=true, x=false}, {"pos"}
-- Dashes inside names become underscores: --max-steps=3 sets max_steps. An arg given twice
-- (--steps=1 --steps=2, or --x and --no-x) is a usage error naming both.
function M.parse(argv)
  local opts, positional, given, texts = {}, {}, {}, {}
  local function set(k, v, a)
    if given[k] then M.usage_error(("--%s is given twice (%s and %s): give it once"):format(k, given[k], a)) end
    given[k] = a
    opts[k] = v
  end
  for _, a in ipairs(argv or {}) do
    local k, v = a:match("^%-%-([%w_%-%.]+)=(.*)$")
    if k then
      k = k:gsub("%-", "_")
      set(k, M.coerce(v), a)
      texts[k] = v
    elseif a:match("^%-%-no%-[%w_%-%.]+$") then
      set((a:sub(6):gsub("%-", "_")), false, a)
    elseif a:match("^%-%-[%w_%-%.]+$") then
      set((a:sub(3):gsub("%-", "_")), true, a)
    else
      positional[#positional + 1] = a
    end
  end
  typed[opts] = texts
  return opts, positional
end

-- the keys of t, sorted (for messages and stable orders)
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

-- A mistake in the command line's args: ltrun prints it as one line (no traceback), exits 2
-- and keeps no run (runtime/cli/run_script.cpp, kUsageErrorPrefix). The error object prints as
-- "usage error: MESSAGE" (tostring), for a caller that catches it with pcall.
local usage_mt = { __tostring = function(e) return "usage error: " .. e.usage end }
function M.usage_error(message)
  error(setmetatable({ usage = tostring(message):gsub("\n", " ") }, usage_mt))
end

-- --help answered (the usage text printed): ltrun exits 0 and keeps no run (runtime/cli/cli.h,
-- kHelpShown), as for a usage error; the error object prints as "help shown"
local help_mt = { __tostring = function() return "help shown" end }
function M.help_shown() error(setmetatable({}, help_mt)) end

-- edit distance of two names: insertions, deletions, substitutions and swaps of neighbours
local function distance(a, b)
  local d = {}
  for i = 0, #a do d[i] = { [0] = i } end
  for j = 0, #b do d[0][j] = j end
  for i = 1, #a do
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      d[i][j] = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        d[i][j] = math.min(d[i][j], d[i - 2][j - 2] + 1)
      end
    end
  end
  return d[#a][#b]
end

-- "; did you mean --steps?" for the known names closest to `name` (at most 1 edit for names of
-- up to 4 characters, 2 for longer ones), "" when none is that close; `prefix` (default "--")
-- goes before each name ("" for a value among an arg's choices)
function M.suggest(name, known, prefix)
  prefix = prefix or "--"
  name = tostring(name)
  local best, most = {}, #name <= 4 and 1 or 2
  for _, k in ipairs(known) do
    local d = distance(name, k)
    if d <= most then
      if d < most then best, most = {}, d end
      best[#best + 1] = prefix .. k
    end
  end
  if #best == 0 then return "" end
  return "; did you mean " .. table.concat(best, " or ") .. "?"
end

-- merge(defaults, opts): a copy of defaults overridden by opts. A value is converted to its
-- default's type (a number default wants a number, a boolean default true/false); an option
-- with no default is an error that lists the known ones.
function M.merge(defaults, opts)
  local cfg = {}
  for k, v in pairs(defaults) do cfg[k] = v end
  for _, k in ipairs(M.sorted_keys(opts)) do
    local v, d = opts[k], defaults[k]
    if d == nil then
      local known = M.sorted_keys(defaults)
      error(("unknown option --%s (known: %s)%s"):format(k, table.concat(known, ", "), M.suggest(k, known)), 0)
    end
    if type(d) == "number" and type(v) ~= "number" then
      error(("option --%s expects a number, got '%s'"):format(k, tostring(v)), 0)
    elseif type(d) == "boolean" and type(v) ~= "boolean" then
      error(("option --%s expects true or false, got '%s'"):format(k, tostring(v)), 0)
    elseif type(d) == "string" then
      v = tostring(v)
    end
    cfg[k] = v
  end
  return cfg
end

return M

-- lt/args.lua: command-line arguments of a script (`ltrun s.lua --steps=10 --fast`) into a
-- table, and merging them into defaults with the defaults' types.
local M = {}

-- "true"/"false" → boolean, numbers → number, anything else stays a string
function M.coerce(v)
  if v == "true" then return true end
  if v == "false" then return false end
  local n = tonumber(v)
  if n ~= nil and v:match("^%s*[-+]?[%d.]") then return n end
  return v
end

-- parse{"--a=1", "--flag", "--no-x", "pos"} → {a=1, flag=true, x=false}, {"pos"}
-- Dashes inside names become underscores: --max-steps=3 sets max_steps.
function M.parse(argv)
  local opts, positional = {}, {}
  for _, a in ipairs(argv or {}) do
    local k, v = a:match("^%-%-([%w_%-%.]+)=(.*)$")
    if k then
      opts[k:gsub("%-", "_")] = M.coerce(v)
    elseif a:match("^%-%-no%-[%w_%-%.]+$") then
      opts[(a:sub(6):gsub("%-", "_"))] = false
    elseif a:match("^%-%-[%w_%-%.]+$") then
      opts[(a:sub(3):gsub("%-", "_"))] = true
    else
      positional[#positional + 1] = a
    end
  end
  return opts, positional
end

-- the keys of t, sorted (for messages and stable orders)
function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
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
      error(("unknown option --%s (known: %s)"):format(k, table.concat(M.sorted_keys(defaults), ", ")), 0)
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

-- lib/lt/repl.lua: what the REPL (`ltrun` alone, runtime/cli/repl.cpp) does in Lua: values shown
-- as readable text (tables nested and bounded, tensors nested by their shape as torch prints them), tab
-- completion of names, fields and methods along a chain (`m.tokenizer:enc`), help(x) / `?x`
-- from the API registry the runtime checks options against (lt.api, runtime/core/api.h), and
-- time(fn) for `%time EXPR`.
local M = {}

local MAX_DEPTH, MAX_ITEMS = 3, 12

local function class_of(v)  -- "lt.Model", "lt.Tensor", ... for runtime objects, else nil
  if type(v) ~= "userdata" then return nil end
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") or nil
end

local function number_text(x)
  if x == math.floor(x) and math.abs(x) < 1e15 then return string.format("%d", x) end
  return string.format("%.6g", x)
end

-- t as torch prints it: values nested by its shape, right-aligned to one width, rows wrapped
-- at 80 columns, then its shape, dtype and device. A large tensor shows the first and last 3
-- entries of each long dimension around "..." (torch's summary: past 1000 values; one line
-- inside a table, past MAX_ITEMS); only those entries come to the CPU, so a GPU tensor of 10^9
-- values stays where it is.
local EDGE, SUMMARY, LINE = 3, 1000, 80
local function tensor_text(t, one_line)
  local shape, n = t.shape, t:numel()
  local cut = n > (one_line and MAX_ITEMS or SUMMARY)
  local small = t
  if cut then
    for d = 1, #shape do
      local size = shape[d]
      if size > 2 * EDGE then
        small = small:index_select(d - 1, { 0, 1, 2, size - 3, size - 2, size - 1 })
      end
    end
  end
  local values = n > 0 and small:to("cpu"):totable() or {}
  local function leaf(x) return type(x) == "number" and number_text(x) or tostring(x) end
  local width = 0
  local function measure(v, d)
    if d > #shape then width = math.max(width, #leaf(v)) return end
    for _, x in ipairs(v) do measure(x, d + 1) end
  end
  measure(values, 1)
  local function rows(v, d)  -- the list of dimension d (1-based) as text
    local size, items = shape[d], {}
    local summarized = cut and size > 2 * EDGE
    for i = 1, #v do
      if summarized and i == EDGE + 1 then items[#items + 1] = "..." end
      items[#items + 1] = d == #shape and string.rep(" ", width - #leaf(v[i])) .. leaf(v[i]) or rows(v[i], d + 1)
    end
    local indent = string.rep(" ", 7 + d)  -- under the first entry: past "tensor(" and d brackets
    if d < #shape then
      return "[" .. table.concat(items, one_line and ", " or ("," .. string.rep("\n", #shape - d) .. indent)) .. "]"
    end
    if one_line then return "[" .. table.concat(items, ", ") .. "]" end
    local per_line, lines = math.max(1, math.floor((LINE - #indent) / (width + 2))), {}
    for i = 1, #items, per_line do lines[#lines + 1] = table.concat(items, ", ", i, math.min(i + per_line - 1, #items)) end
    return "[" .. table.concat(lines, ",\n" .. indent) .. "]"
  end
  local body = #shape == 0 and leaf(values) or n == 0 and "[]" or rows(values, 1)
  return string.format("tensor(%s, shape=[%s], dtype=%s, device=%s)", body, table.concat(shape, ", "), t.dtype,
    t.device)
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  if type(k) == "string" then return string.format("[%q]", k) end
  return "[" .. (type(k) == "number" and number_text(k) or tostring(k)) .. "]"
end

local show

-- keys of t in a stable order: the array part first, then numbers, then names sorted
local function sorted_keys(t)
  local n, keys = #t, {}
  for k in pairs(t) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  table.sort(keys, function(a, b)
    if type(a) ~= type(b) then return type(a) == "number" end
    if type(a) == "number" or type(a) == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return n, keys
end

local function table_text(t, depth, seen, indent)
  if seen[t] then return "{<cycle>}" end
  if depth >= MAX_DEPTH then return next(t) == nil and "{}" or "{...}" end
  seen[t] = true
  local n, keys = sorted_keys(t)
  local parts, count, total = {}, 0, n + #keys
  for i = 1, n do
    if count == MAX_ITEMS then break end
    count = count + 1
    parts[#parts + 1] = show(t[i], depth + 1, seen, indent .. "  ")
  end
  for _, k in ipairs(keys) do
    if count == MAX_ITEMS then break end
    count = count + 1
    parts[#parts + 1] = key_text(k) .. " = " .. show(t[k], depth + 1, seen, indent .. "  ")
  end
  seen[t] = nil
  if total > count then parts[#parts + 1] = string.format("... (%d more)", total - count) end
  if #parts == 0 then return "{}" end
  local flat = "{" .. table.concat(parts, ", ") .. "}"
  if #flat + #indent <= 100 and not flat:find("\n") then return flat end
  return "{\n" .. indent .. "  " .. table.concat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
end

-- v as the REPL prints it; top-level strings print as they are (as print does), nested ones quoted
function show(v, depth, seen, indent)
  depth, seen, indent = depth or 0, seen or {}, indent or ""
  local tv = type(v)
  if tv == "string" then return depth == 0 and v or (string.format("%q", v):gsub("\\\n", "\\n")) end
  if tv == "number" then return depth == 0 and tostring(v) or number_text(v) end
  if tv == "table" then
    local mt = getmetatable(v)
    if mt and rawget(mt, "__tostring") then return tostring(v) end
    return table_text(v, depth, seen, indent)
  end
  if class_of(v) == "lt.Tensor" then
    local ok, text = pcall(tensor_text, v, depth > 0)
    return ok and text or tostring(v)
  end
  return tostring(v)
end
M.show = show

-- ---- completion ----------------------------------------------------------------------------

-- the method table of a runtime object: its __index table, or the table an __index function
-- looks in first (its first upvalue; bindings/luat.cpp new_script_class, bindings/tensor.cpp)
local function methods_of(v)
  local mt = getmetatable(v)
  if type(mt) ~= "table" then return nil end
  local index = rawget(mt, "__index")
  if type(index) == "function" then
    local _, up = debug.getupvalue(index, 1)
    index = up
  end
  return type(index) == "table" and index or nil
end

-- the fields a runtime object answers (its class's declaration in lt.api)
local function fields_of(v)
  local class = class_of(v)
  local doc = class and lt.api(class)
  local out = {}
  for _, o in ipairs(doc and doc.options or {}) do out[#out + 1] = o.key end
  return out
end

local function add_keys(out, t, seen)
  local depth = 0
  while type(t) == "table" and not seen[t] and depth < 8 do  -- a table and its __index chain
    seen[t] = true
    for k in pairs(t) do
      if type(k) == "string" then out[k] = true end
    end
    local mt = getmetatable(t)
    t = type(mt) == "table" and rawget(mt, "__index") or nil
    depth = depth + 1
  end
end

-- completions of `prefix` ("lt.run.lo", "m.tok", "m.tokenizer:enc"): the chain before the last
-- . or : is looked up from the globals, each step through the value's own indexing (so fields an
-- object provides through __index count); after ':' only methods
function M.complete(prefix)
  local head, sep, tail = prefix:match("^(.*)([.:])([%w_]*)$")
  if not head then head, sep, tail = "", "", prefix end
  local v = _G
  if head ~= "" then
    for name in head:gmatch("[^.:]+") do
      if not name:match("^[%a_][%w_]*$") then return {} end
      local ok, x = pcall(function() return v[name] end)
      if not ok or x == nil then return {} end
      v = x
    end
  end
  local keys, seen = {}, {}
  if type(v) == "table" then add_keys(keys, v, seen)
  elseif type(v) == "userdata" or type(v) == "string" then
    add_keys(keys, type(v) == "string" and string or methods_of(v), seen)
    if sep ~= ":" then
      for _, k in ipairs(fields_of(v)) do keys[k] = true end
    end
  end
  local out = {}
  for k in pairs(keys) do
    if k:sub(1, #tail) == tail and k:sub(1, 1) ~= "_" then
      local ok, x = pcall(function() return v[k] end)
      if sep ~= ":" or (ok and type(x) == "function") then out[#out + 1] = head .. sep .. k end
    end
  end
  table.sort(out)
  return out
end

-- ---- help ----------------------------------------------------------------------------------

-- the name lt.api knows a function by: its path under lt, or CLASS:METHOD of a runtime class
local function name_of(f)
  local seen = {}
  local function walk(t, path, depth)
    if seen[t] or depth > 3 then return nil end
    seen[t] = true
    for k, x in pairs(t) do
      if type(k) == "string" then
        if x == f then return path .. "." .. k end
        if type(x) == "table" then
          local found = walk(x, path .. "." .. k, depth + 1)
          if found then return found end
        end
      end
    end
  end
  local found = walk(lt, "lt", 0)
  if found then return found end
  for class, mt in pairs(debug.getregistry()) do
    if type(class) == "string" and class:match("^lt%.") and type(mt) == "table" then
      local methods = methods_of(setmetatable({}, mt)) or {}
      for k, x in pairs(methods) do
        if x == f then return class:match("([%w_]+)$"):lower() .. ":" .. k end
      end
    end
  end
end

local function api_text(doc)
  local lines = { doc.signature, "  " .. doc.summary }
  if #doc.options > 0 then
    local width = 0
    for _, o in ipairs(doc.options) do width = math.max(width, #o.key) end
    lines[#lines + 1] = doc.name:match("^lt%.[%u]") and "fields:" or "options:"
    for _, o in ipairs(doc.options) do
      lines[#lines + 1] = string.format("  %-" .. width .. "s  %-14s %s", o.key, o.kind, o.doc)
    end
  end
  return table.concat(lines, "\n")
end

local function lua_function_text(name, f)
  local info = debug.getinfo(f, "Su")
  if info.what == "C" then return (name or "a function") .. ": a C++ function without a declaration in lt.api" end
  local params = {}
  for i = 1, info.nparams or 0 do params[i] = debug.getlocal(f, i) end
  if info.isvararg then params[#params + 1] = "..." end
  return string.format("%s(%s)\n  a Lua function, %s:%d", name or "function", table.concat(params, ", "),
    info.short_src, info.linedefined)
end

-- what `?` alone (or help()) prints
M.usage = [[
The ltrun REPL: Lua with `lt` loaded (docs/reference/repl.md).
  EXPR or =EXPR   print the values (tables nested, tensors as torch prints them)
  ?x  help(x)     what x is: a function's signature and options, an object's fields and methods
  ?lt.run         the names in a table (Tab completes them too: lt.run.<Tab>)
  %time CODE      the wall time of an expression (its values printed) or of statements
  exit  quit      leave (Ctrl-D too); Ctrl-C stops what runs, or drops the line being typed
Nothing is stored unless ltrun started with --log.]]

-- help(x[, text]) → the text `?x` prints: a function's signature, summary and options, an
-- object's fields and methods, a table's keys; `?` alone, help(): the REPL's own usage
function M.help(x, text)
  if x == nil and (text == nil or text == "") then return M.usage end
  if x == nil then return text .. " is nil" end
  local name = type(x) == "function" and name_of(x) or nil
  if name and name:match("^lt%.") and text and text:match("^[%w_.]+$") and text ~= name then name = text end
  local doc = name and lt.api(name) or (type(x) == "string" and lt.api(x))
  if doc then return api_text(doc) end
  if type(x) == "function" then return lua_function_text(name or text, x) end
  local class = class_of(x)
  if class then
    local lines = { show(x) }
    local cdoc = lt.api(class)
    if cdoc then lines[#lines + 1] = api_text(cdoc) end
    local methods = {}
    for k in pairs(methods_of(x) or {}) do
      if type(k) == "string" and k:sub(1, 1) ~= "_" then methods[#methods + 1] = k end
    end
    table.sort(methods)
    lines[#lines + 1] = "methods: " .. table.concat(methods, ", ")
    return table.concat(lines, "\n")
  end
  if type(x) == "table" then
    local keys = M.complete((text or "_") .. ".")
    for i, k in ipairs(keys) do keys[i] = k:match("([^.]*)$") end
    return (text or "table") .. ": a table with keys " .. table.concat(keys, ", ")
  end
  return show(x)
end

-- every function under lt (after `require "lt"`) and every method of a runtime class, one per
-- line "NAME<TAB>C|Lua[<TAB>CLASS]" (a Lua function documented in lib/lt/init.lua: "NAME<TAB>Lua
-- <TAB><TAB>SIGNATURE<TAB>SUMMARY"), sorted, and "CLASS<TAB>class" for each class: what `ltrun doc
-- api` (runtime/cli/doc.cpp) sets against the registry
function M.listing()
  local lines, seen = {}, {}
  local function walk(t, path, depth)
    if seen[t] or depth > 3 then return end
    seen[t] = true
    for k, x in pairs(t) do
      if type(k) == "string" and k:sub(1, 1) ~= "_" then
        if type(x) == "function" then
          local name, c = path .. "." .. k, debug.getinfo(x, "S").what == "C"
          local d = not c and lt._lua_docs and lt._lua_docs[name]
          lines[#lines + 1] = name .. "\t" .. (c and "C" or "Lua") .. (d and ("\t\t" .. d[1] .. "\t" .. d[2]) or "")
        elseif type(x) == "table" and getmetatable(x) == nil then
          walk(x, path .. "." .. k, depth + 1)
        end
      end
    end
  end
  walk(lt, "lt", 0)
  for class, mt in pairs(debug.getregistry()) do
    if type(class) == "string" and class:match("^lt%.%w") and type(mt) == "table" and rawget(mt, "__name") == class then
      lines[#lines + 1] = class .. "\tclass"
      local prefix = class:match("([%w_]+)$"):lower()
      for k, x in pairs(methods_of(setmetatable({}, mt)) or {}) do
        if type(k) == "string" and k:sub(1, 1) ~= "_" and type(x) == "function" then
          lines[#lines + 1] = prefix .. ":" .. k .. "\t" .. (debug.getinfo(x, "S").what == "C" and "C" or "Lua") .. "\t" .. class
        end
      end
    end
  end
  table.sort(lines)
  return table.concat(lines, "\n")
end

-- hint(line) → "; did you mean dtype?" for an error line of the option checkers' shape
-- ("fn: unknown option 'dtyp' (known: device, dtype)": runtime/core/options.h, bindings/luat.h,
-- lt.check_options) when a known name is near the key (lt.study.args.suggest), else ""
function M.hint(line)
  local key, known = line:match("unknown option '([^']*)' %(known: ([^)]*)%)")
  if not key or line:find("did you mean", 1, true) then return "" end
  local names = {}
  for name in known:gmatch("[^, ]+") do names[#names + 1] = name end
  return require("lt.study.args").suggest(key, names, "")
end

-- ---- timing --------------------------------------------------------------------------------

-- time(fn) runs fn, prints its wall time (lt.clock waits for the device's queued work) and
-- returns fn's results
function M.time(fn, label)
  if type(fn) ~= "function" then error("time: expected a function, got " .. type(fn), 2) end
  local t0 = lt.clock()
  local results = { n = 0 }
  local function keep(...) results = { n = select("#", ...), ... } end
  keep(fn())
  local dt = lt.clock() - t0
  local unit = dt < 1e-3 and string.format("%.1f us", dt * 1e6) or dt < 1 and string.format("%.2f ms", dt * 1e3)
      or string.format("%.3f s", dt)
  io.stderr:write(string.format("wall %s%s\n", unit, label and ("  (" .. label .. ")") or ""))
  return unpack(results, 1, results.n)
end

-- time_code(code) for `%time CODE`: CODE as an expression (its values returned) or, when it is
-- not one, as statements; run interpreted, as the REPL runs what is typed (so Ctrl-C stops it)
function M.time_code(code)
  local f = loadstring("return " .. code, "=stdin")
  if not f then
    local err
    f, err = loadstring(code, "=stdin")
    if not f then error(err, 0) end
  end
  if jit then jit.off(f, true) end
  return M.time(f)
end

-- the REPL's printer, and help and time as globals of the session
function M.install()
  debug.getregistry()["lt.show"] = show  -- the printer of bindings/interp.cpp Interp::eval
  rawset(_G, "help", function(x, text) print(M.help(x, text)) end)
  rawset(_G, "time", M.time)
end

return M

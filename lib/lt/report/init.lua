-- lt/report/init.lua (lt.report): what a study shows of its results: a results table (printed, as
-- CSV, and from the store by a named query), paired comparisons of two scorings of the same items,
-- and the standard figures, with one colour per plan (a series name) across every figure a study
-- draws.
--   report.table{ columns = {{"plan", "%-14s"}, {"new_loss", "%9.4f", head = "new loss"}}, rows = {...},
--                 csv = PATH }
--   report.paired("greedy", before_ok, after_ok)    -- items up / down, sign test, logged
--   local colours = report.colours{ "base", "full", "train_shallow" } -- a plan's colour, held by the study
--   report.curves(PATH, { title =, series = { full = {...}, ... }, smooth =, colours = colours })
--   report.scores(PATH, { title =, scores = { plan = lt.eval score table }, order = {...}, colours = colours })
--   report.profile(PATH, { title =, x =, series = { name = values } })
-- The module holds no state: a study that wants one colour per plan across its figures passes
-- the same colours object to each; without one, a figure colours its series in its own order.
local svg = require "lt.report.svg"
local M = {}

-- ---- colours ------------------------------------------------------------------------------------
local palette = { "#525252", "#2171b5", "#238b45", "#cb181d", "#6a51a3", "#d94801", "#1b9e77", "#e7298a",
                  "#66a61e", "#a6761d" }

-- report.colours(names) → colours: colours:of(name) is a plan's colour, fixed at its first use
-- (`names`, optional: these plans first, in this order), the same in every figure it is given to
function M.colours(names)
  local assigned, n = {}, 0
  local c = {}
  function c:of(name)
    if not assigned[name] then
      n = n + 1
      assigned[name] = palette[(n - 1) % #palette + 1]
    end
    return assigned[name]
  end
  for _, name in ipairs(names or {}) do c:of(name) end
  return c
end

-- ---- tables -------------------------------------------------------------------------------------
-- a number format as a text format of the same width and side ("%+7.3f" → "%7s")
local function as_text(fmt) return (fmt:gsub("%%(%-?)[+ #0]*(%d*)%.?%d*[dfgsx]", "%%%1%2s")) end

local function cell(fmt, v)
  if v == nil or v ~= v then return as_text(fmt):format("n/a") end
  if type(v) == "string" and not fmt:find("s$") then return as_text(fmt):format(v) end
  return fmt:format(v)
end

-- Prints a table (a header line, one line per row) and returns it as text. columns: {key,
-- format, head = shown name (default key)}; a missing or NaN value prints n/a. With csv =
-- PATH it also writes the rows as CSV (keys as the header, values unformatted). show = {key,
-- ...}: only these columns are printed (a table that fits the terminal), every column goes to
-- the CSV.
function M.table(o)
  lt.check_options(o, "report.table", { "columns", "rows", "csv", "title", "show" })
  local lines = {}
  if o.title then lines[1] = o.title end
  local printed = o.columns
  if o.show then
    local by_key = {}
    for _, c in ipairs(o.columns) do by_key[c[1]] = c end
    printed = {}
    for i, k in ipairs(o.show) do
      printed[i] = by_key[k] or error(("report.table: show: %s is not a column"):format(tostring(k)), 2)
    end
  end
  local head = {}
  for i, c in ipairs(printed) do
    head[i] = as_text(c[2]):format(c.head or c[1])
  end
  lines[#lines + 1] = table.concat(head, " ")
  for _, r in ipairs(o.rows) do
    local line = {}
    for i, c in ipairs(printed) do line[i] = cell(c[2], r[c[1]]) end
    lines[#lines + 1] = table.concat(line, " ")
  end
  local text = table.concat(lines, "\n")
  print(text)
  if o.csv then
    local f = assert(io.open(o.csv, "w"))
    local keys = {}
    for i, c in ipairs(o.columns) do keys[i] = c[1] end
    f:write(table.concat(keys, ","), "\n")
    for _, r in ipairs(o.rows) do
      local vals = {}
      for i, c in ipairs(o.columns) do
        local v = r[c[1]]
        vals[i] = (v == nil or v ~= v) and "" or (type(v) == "string" and ('"' .. v:gsub('"', '""') .. '"') or tostring(v))
      end
      f:write(table.concat(vals, ","), "\n")
    end
    f:close()
  end
  return text
end

-- A results table from the store: one row per child run of `parent` (default: the current
-- run; the named queries @children, @run_params, @last_metrics), with the run's name and
-- status, the given params and the last value of each given metric; printed (and as CSV with
-- csv = PATH) by report.table. → the rows
function M.runs(o)
  lt.check_options(o, "report.runs", { "parent", "params", "metrics", "csv", "title" })
  local cols = { { "name", "%-16s", head = "run" }, { "status", "%-11s" } }
  for _, p in ipairs(o.params or {}) do cols[#cols + 1] = { p, "%12s" } end
  for _, m in ipairs(o.metrics or {}) do cols[#cols + 1] = { m, "%12.4g" } end
  local rows = {}
  for _, c in ipairs(lt.run.query("@children", o.parent or lt.run.id())) do
    local row = { name = c.name, status = c.status, run = c.id }
    for _, p in ipairs(lt.run.query("@run_params", c.id)) do row[p.key] = p.value end
    for _, m in ipairs(lt.run.query("@last_metrics", c.id)) do row[m.name] = m.value end
    for _, p in ipairs(o.params or {}) do row[p] = row[p] ~= nil and tostring(row[p]) or nil end
    rows[#rows + 1] = row
  end
  M.table{ columns = cols, rows = rows, csv = o.csv, title = o.title }
  return rows
end

-- ---- paired comparisons -------------------------------------------------------------------------
-- Two scorings of the same items (lists of booleans, or of numbers such as correct answers
-- out of k): items that went up and down, the exact sign test (McNemar) on them; logged as
-- NAME/items_up, NAME/items_down, NAME/sign_test_p. Returns up, down, p and a sentence.
function M.paired(name, before, after)
  assert(#before == #after, ("report.paired %s: %d items before, %d after"):format(name, #before, #after))
  local function v(x) return x == true and 1 or (x == false or x == nil) and 0 or x end
  local up, down = 0, 0
  for i = 1, #before do
    if v(after[i]) > v(before[i]) then up = up + 1 elseif v(after[i]) < v(before[i]) then down = down + 1 end
  end
  local p = lt.stats.sign_test(up, down)
  lt.run.log{ [name .. "/items_up"] = up, [name .. "/items_down"] = down, [name .. "/sign_test_p"] = p }
  return up, down, p, ("%d items up, %d down, sign test p = %.2g"):format(up, down, p)
end

-- ---- figures ------------------------------------------------------------------------------------
local function ordered(series, order)
  local out, seen = {}, {}
  for _, n in ipairs(order or {}) do
    if series[n] then out[#out + 1] = n; seen[n] = true end
  end
  local rest = {}
  for n in pairs(series) do if not seen[n] then rest[#rest + 1] = n end end
  table.sort(rest)
  for _, n in ipairs(rest) do out[#out + 1] = n end
  return out
end

-- a value's shape in a message: "a number (3)", "a table with keys loss, step", "a list of 2
-- tables"
local function shape(v)
  if type(v) ~= "table" then return ("a %s (%s)"):format(type(v), tostring(v)) end
  if #v > 0 then return ("a list of %d %ss"):format(#v, type(v[1])) end
  local keys = {}
  for k in pairs(v) do if #keys < 4 then keys[#keys + 1] = tostring(k) end end
  table.sort(keys)
  return #keys == 0 and "an empty table" or "a table with keys " .. table.concat(keys, ", ")
end

-- a figure's options checked before any drawing, each mistake named by its option: series =
-- { NAME = { number, ... } } (a list per name, not empty); `order`: a list of names
local function check_figure(fn, path, o, known)
  if type(path) ~= "string" then error(("%s: expected (path, { options }), got %s as the path"):format(fn, shape(path)), 3) end
  if type(o) ~= "table" then error(("%s: expected (path, { options }), got %s as the options"):format(fn, shape(o)), 3) end
  lt.check_options(o, fn, known)
  local series = o.series
  if type(series) ~= "table" or next(series) == nil then
    error(("%s: series: expected { NAME = { value, ... }, ... }, got %s"):format(fn, shape(series)), 3)
  end
  for name, values in pairs(series) do
    if type(name) ~= "string" then
      error(("%s: series: expected values by name, { full = { 3.1, 2.7 } }, got a list (series[%s] is %s)")
            :format(fn, tostring(name), shape(values)), 3)
    end
    if type(values) ~= "table" or #values == 0 then
      error(("%s: series.%s: expected a list of numbers, got %s"):format(fn, name, shape(values)), 3)
    end
    for i, v in ipairs(values) do
      if type(v) ~= "number" then error(("%s: series.%s[%d]: expected a number, got %s"):format(fn, name, i, shape(v)), 3) end
    end
  end
  if o.order ~= nil and (type(o.order) ~= "table" or (next(o.order) ~= nil and #o.order == 0)) then
    error(("%s: order: expected a list of series names, got %s"):format(fn, shape(o.order)), 3)
  end
  if o.smooth ~= nil and (type(o.smooth) ~= "number" or o.smooth < 1) then
    error(("%s: smooth: expected a number of points >= 1, got %s"):format(fn, shape(o.smooth)), 3)
  end
end

-- curves by plan: series = {plan = {values by step}}; x_title, y_title, smooth, order
function M.curves(path, o)
  check_figure("report.curves", path, o, { "title", "series", "order", "smooth", "x_title", "y_title", "colours" })
  local s, colours = {}, o.colours or M.colours()
  for _, n in ipairs(ordered(o.series, o.order)) do s[#s + 1] = { name = n, values = o.series[n], colour = colours:of(n) } end
  return svg.lines(path, { title = o.title, x_title = o.x_title or "step", y_title = o.y_title, series = s,
                           smooth = o.smooth })
end

-- scores by plan and category: scores = {plan = a protocol's summary from lt.eval
-- ({acc =, acc_macro =, by_category = {cat = acc}})}. The first group is the macro average
-- over the categories, shown only when there are several; a dashed line marks `chance`.
function M.scores(path, o)
  local names, colours = ordered(o.scores, o.order), o.colours or M.colours()
  local cats = {}
  for _, n in ipairs(names) do for c in pairs(o.scores[n].by_category or {}) do cats[c] = true end end
  local cat_list = {}
  for c in pairs(cats) do cat_list[#cat_list + 1] = c end
  table.sort(cat_list)
  local labels = #cat_list > 1 and { "average" } or {}
  for _, c in ipairs(cat_list) do labels[#labels + 1] = c end
  if #labels == 0 then labels = { "all" } end
  local groups = {}
  for _, n in ipairs(names) do
    local sc = o.scores[n]
    local values = #cat_list > 1 and { sc.acc_macro or sc.acc } or {}
    for _, c in ipairs(cat_list) do values[#values + 1] = sc.by_category[c] or 0 end
    if #values == 0 then values = { sc.acc } end
    groups[#groups + 1] = { name = n, values = values, colour = colours:of(n) }
  end
  return svg.bars(path, { title = o.title, categories = labels, series = groups, y_title = o.y_title or "accuracy",
                          ymin = 0, ymax = 1, ref = o.chance and { value = o.chance, label = "chance" } or nil })
end

-- per-layer profiles: x = layer labels, series = {name = values per layer}
function M.profile(path, o)
  check_figure("report.profile", path, o, { "title", "series", "order", "x", "x_title", "colours" })
  local s, colours = {}, o.colours or M.colours()
  for _, n in ipairs(ordered(o.series, o.order)) do s[#s + 1] = { name = n, values = o.series[n], colour = colours:of(n) } end
  return svg.profile(path, { title = o.title, x = o.x, x_title = o.x_title or "layer", series = s })
end

return M

-- lt/svg.lua: small SVG pictures written as text, for run artifacts: heatmaps (rows x columns,
-- one colour ramp per panel, like LayerTracer's Figure 4) and line profiles with a marked
-- position (Figure 10). Every cell and point carries a <title>, so a browser shows its value.
local M = {}

-- colour ramps: white to dark, through one middle stop (ColorBrewer's Greens / Reds / Blues)
M.ramps = {
  greens = { { 247, 252, 245 }, { 116, 196, 118 }, { 0, 68, 27 } },
  reds = { { 255, 245, 240 }, { 251, 106, 74 }, { 103, 0, 13 } },
  blues = { { 247, 251, 255 }, { 107, 174, 214 }, { 8, 48, 107 } },
}

local function escape(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

local function num(v) return ("%.4g"):format(v) end

local function open_svg(width, height)
  return {
    ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">')
      :format(width, height),
    ('<rect width="%d" height="%d" fill="white"/>'):format(width, height),
  }
end

-- colour at t in [0, 1] of a ramp
function M.colour(ramp, t)
  local stops = assert(M.ramps[ramp] or (type(ramp) == "table" and ramp), "svg: unknown colour ramp " .. tostring(ramp))
  t = math.max(0, math.min(1, t ~= t and 0 or t))
  local x = t * (#stops - 1)
  local i = math.min(math.floor(x) + 1, #stops - 1)
  local f, a, b = x - (i - 1), stops[i], stops[i + 1]
  local c = {}
  for k = 1, 3 do c[k] = math.floor(a[k] + (b[k] - a[k]) * f + 0.5) end
  return ("#%02x%02x%02x"):format(c[1], c[2], c[3])
end

local function write(path, parts)
  local f, err = io.open(path, "w")
  if not f then error(("svg: cannot write %s: %s"):format(path, err), 0) end
  f:write(table.concat(parts, "\n"), "\n")
  f:close()
  return path
end

local function text(parts, x, y, s, attrs)
  parts[#parts + 1] = ('<text x="%s" y="%s"%s>%s</text>'):format(num(x), num(y), attrs or "", escape(s))
end

-- heatmap(path, {title=, rows = {labels}, cols = {labels}, panels = {{title=, ramp=, values =
-- {{...row 1...}, ...}}}}): panels side by side sharing the row labels; each panel's colours
-- span its own min..max, printed under it.
function M.heatmap(path, spec)
  local rows, cols, panels = spec.rows, spec.cols, spec.panels
  local cw, ch, left, top, gap = 22, 18, 70, 52, 30
  local pw = cw * #cols
  local width = left + #panels * (pw + gap)
  local height = top + ch * #rows + 60
  local p = open_svg(width, height)
  text(p, 8, 18, spec.title or "", ' font-size="14" font-weight="bold"')
  for r, label in ipairs(rows) do text(p, left - 6, top + (r - 0.5) * ch + 4, label, ' text-anchor="end"') end
  if spec.row_title then text(p, 8, top - 8, spec.row_title) end
  for k, panel in ipairs(panels) do
    local x0 = left + (k - 1) * (pw + gap)
    local lo, hi = math.huge, -math.huge
    for r = 1, #rows do
      local row = panel.values[r] or error(("svg.heatmap: panel %d has no row %d"):format(k, r), 0)
      for c = 1, #cols do
        local v = row[c] or error(("svg.heatmap: panel %d row %d has no column %d"):format(k, r, c), 0)
        lo, hi = math.min(lo, v), math.max(hi, v)
      end
    end
    text(p, x0, top - 22, panel.title or "", ' font-weight="bold"')
    local every = math.max(1, math.ceil(#cols / 16))
    for c, label in ipairs(cols) do
      if (c - 1) % every == 0 then text(p, x0 + (c - 0.5) * cw, top - 6, label, ' text-anchor="middle"') end
    end
    for r = 1, #rows do
      for c = 1, #cols do
        local v = panel.values[r][c]
        local t = hi > lo and (v - lo) / (hi - lo) or 0
        p[#p + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s, %s: %s</title></rect>'):format(
          x0 + (c - 1) * cw, top + (r - 1) * ch, cw, ch, M.colour(panel.ramp or "greens", t),
          escape(rows[r]), escape(cols[c]), num(v))
      end
    end
    local y = top + ch * #rows + 16
    for i = 0, 9 do
      p[#p + 1] = ('<rect x="%s" y="%d" width="%s" height="8" fill="%s"/>'):format(
        num(x0 + i * pw / 10), y, num(pw / 10), M.colour(panel.ramp or "greens", i / 9))
    end
    text(p, x0, y + 22, num(lo))
    text(p, x0 + pw, y + 22, num(hi), ' text-anchor="end"')
    if spec.col_title then text(p, x0 + pw / 2, y + 38, spec.col_title, ' text-anchor="middle"') end
  end
  p[#p + 1] = "</svg>"
  return write(path, p)
end

-- profile(path, {title=, x = {labels}, x_title=, series = {{name=, values=, colour=}}, ymin=,
-- ymax=, mark = {at=, label=}}): one line per series over the points 0..#x-1; mark.at is in
-- those units (2.5 lies between the third and the fourth point) and draws a dashed line.
function M.profile(path, spec)
  local xs, series = spec.x, spec.series
  local width, height, left, right, top, bottom = 640, 340, 56, 130, 40, 46
  local lo, hi = spec.ymin, spec.ymax
  if not lo or not hi then
    local a, b = math.huge, -math.huge
    for _, s in ipairs(series) do
      for _, v in ipairs(s.values) do a, b = math.min(a, v), math.max(b, v) end
    end
    lo, hi = lo or a, hi or b
  end
  if hi <= lo then hi = lo + 1 end
  local pw, ph = width - left - right, height - top - bottom
  local function X(i) return left + (#xs > 1 and i / (#xs - 1) or 0.5) * pw end
  local function Y(v) return top + (1 - (v - lo) / (hi - lo)) * ph end
  local p = open_svg(width, height)
  text(p, 8, 20, spec.title or "", ' font-size="14" font-weight="bold"')
  p[#p + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'):format(left, top, pw, ph)
  for i = 0, 4 do
    local v = lo + (hi - lo) * i / 4
    text(p, left - 6, Y(v) + 4, num(v), ' text-anchor="end"')
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#eee"/>'):format(left, left + pw, num(Y(v)), num(Y(v)))
  end
  local every = math.max(1, math.ceil(#xs / 16))
  for i, label in ipairs(xs) do
    if (i - 1) % every == 0 then text(p, X(i - 1), top + ph + 16, label, ' text-anchor="middle"') end
  end
  if spec.x_title then text(p, left + pw / 2, height - 8, spec.x_title, ' text-anchor="middle"') end
  if spec.mark then
    local x = X(spec.mark.at)
    p[#p + 1] = ('<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="black" stroke-dasharray="5,4"/>'):format(
      num(x), num(x), top, top + ph)
    text(p, x + 4, top + 12, spec.mark.label or "")
  end
  for k, s in ipairs(series) do
    local colour = s.colour or ({ "#238b45", "#cb181d", "#2171b5" })[(k - 1) % 3 + 1]
    local pts = {}
    for i, v in ipairs(s.values) do pts[i] = num(X(i - 1)) .. "," .. num(Y(v)) end
    p[#p + 1] = ('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>')
      :format(colour, table.concat(pts, " "))
    for i, v in ipairs(s.values) do
      p[#p + 1] = ('<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s, %s: %s</title></circle>'):format(
        num(X(i - 1)), num(Y(v)), colour, escape(s.name or ""), escape(xs[i]), num(v))
    end
    local ly = top + 14 + (k - 1) * 18
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>'):format(
      left + pw + 12, left + pw + 32, ly, ly, colour)
    text(p, left + pw + 38, ly + 4, s.name or "")
  end
  p[#p + 1] = "</svg>"
  return write(path, p)
end

return M

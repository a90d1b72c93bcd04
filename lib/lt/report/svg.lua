-- lt/report/svg.lua: small SVG pictures written as text, for run artifacts: heatmaps (rows x
-- columns, one colour ramp per panel, like LayerTracer's Figure 4) and line profiles with a marked
-- position and shaded zones (Figure 10). Every cell and point carries a <title>, so a browser shows
-- its value.
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

-- Approximate width in px of text at a font size (sans-serif: at most about 0.62 em per
-- character, 0.72 bold: generous), so that titles and labels get the room they need.
function M.text_width(s, size, bold)
  local n = 0
  for _ in tostring(s):gmatch("[^\128-\191]") do n = n + 1 end  -- UTF-8 characters
  return n * size * (bold and 0.72 or 0.62)
end

-- heatmap(path, {title=, rows = {labels}, cols = {labels}, row_title=, col_title=, panels =
-- {{title=, ramp=, scale = "panel" | "row", values = {{...row 1...}, ...}, na = "why"}}}):
-- panels side by side sharing the row labels; each panel's colours span its own min..max
-- (scale = "row": each row's own, for rows of different scales), printed under it. A missing
-- value (a row shorter than cols, or false) is a grey "n/a" cell: undefined, not zero.
-- Cells are 10..28 px wide so that 4 to 64 columns stay legible; panels are at least as wide
-- as their titles, and the picture as wide as its title.
function M.heatmap(path, spec)
  local rows, cols, panels = spec.rows, spec.cols, spec.panels
  local ncol = #cols
  local ch, top, gap = 18, 66, 36
  local cw = math.max(10, math.min(28, math.floor(720 / math.max(ncol, 1))))
  local left = 70
  for _, label in ipairs(rows) do left = math.max(left, M.text_width(label, 11) + 16) end
  if spec.row_title then left = math.max(left, M.text_width(spec.row_title, 11) + 16) end
  local pws = {}
  for k, panel in ipairs(panels) do
    pws[k] = math.max(cw * ncol, M.text_width(panel.title or "", 11, true) + 8, 140,
                      M.text_width((spec.col_title or "") .. "; grey: n/a", 11) + 8,
                      panel.na and M.text_width("(" .. panel.na .. ")", 9) + 8 or 0)
  end
  local width = left + 16
  for k = 1, #panels do width = width + pws[k] + (k > 1 and gap or 0) end
  width = math.ceil(math.max(width, M.text_width(spec.title or "", 14, true) + 24))
  local height = top + ch * #rows + 74
  local p = open_svg(width, height)
  text(p, 8, 20, spec.title or "", ' font-size="14" font-weight="bold"')
  for r, label in ipairs(rows) do text(p, left - 6, top + (r - 0.5) * ch + 4, label, ' text-anchor="end"') end
  if spec.row_title then text(p, 8, top - 8, spec.row_title) end
  local x0 = left
  for k, panel in ipairs(panels) do
    local pw = pws[k]
    local cwk = pw / math.max(ncol, 1)  -- cells fill a panel widened for its title
    local function value(r, c)
      local row = panel.values[r] or error(("svg.heatmap: panel %d has no row %d"):format(k, r), 0)
      local v = row[c]
      if v == nil or v == false then return nil end
      if type(v) ~= "number" then error(("svg.heatmap: panel %d row %d column %d: %s is not a number"):format(k, r, c, tostring(v)), 0) end
      return v
    end
    local by_row = panel.scale == "row"
    local lo, hi, rlo, rhi, any_na = math.huge, -math.huge, {}, {}, false
    for r = 1, #rows do
      rlo[r], rhi[r] = math.huge, -math.huge
      for c = 1, ncol do
        local v = value(r, c)
        if v then
          lo, hi = math.min(lo, v), math.max(hi, v)
          rlo[r], rhi[r] = math.min(rlo[r], v), math.max(rhi[r], v)
        else
          any_na = true
        end
      end
    end
    text(p, x0, top - 26, panel.title or "", ' font-weight="bold"')
    local every = math.max(1, math.ceil(16 / cwk))
    for c, label in ipairs(cols) do
      if (c - 1) % every == 0 then text(p, x0 + (c - 0.5) * cwk, top - 8, label, ' text-anchor="middle"') end
    end
    for r = 1, #rows do
      local a, b = by_row and rlo[r] or lo, by_row and rhi[r] or hi
      for c = 1, ncol do
        local v = value(r, c)
        local x, y = x0 + (c - 1) * cwk, top + (r - 1) * ch
        if v then
          local t = b > a and (v - a) / (b - a) or 0
          p[#p + 1] = ('<rect x="%s" y="%d" width="%s" height="%d" fill="%s"><title>%s, %s: %s</title></rect>'):format(
            num(x), y, num(cwk), ch, M.colour(panel.ramp or "greens", t), escape(rows[r]), escape(cols[c]), num(v))
        else
          p[#p + 1] = ('<rect x="%s" y="%d" width="%s" height="%d" fill="#e8e8e8" stroke="white"><title>%s, %s: n/a%s</title></rect>')
            :format(num(x), y, num(cwk), ch, escape(rows[r]), escape(cols[c]), panel.na and (" (" .. escape(panel.na) .. ")") or "")
          if cwk >= 18 then text(p, x + cwk / 2, y + ch / 2 + 3, "n/a", ' text-anchor="middle" font-size="8" fill="#777"') end
        end
      end
    end
    local y = top + ch * #rows + 16
    for i = 0, 9 do
      p[#p + 1] = ('<rect x="%s" y="%d" width="%s" height="8" fill="%s"/>'):format(
        num(x0 + i * pw / 10), y, num(pw / 10), M.colour(panel.ramp or "greens", i / 9))
    end
    if by_row then
      text(p, x0, y + 22, "row min")
      text(p, x0 + pw, y + 22, "row max", ' text-anchor="end"')
    elseif lo <= hi then
      text(p, x0, y + 22, num(lo))
      text(p, x0 + pw, y + 22, num(hi), ' text-anchor="end"')
    end
    local note = spec.col_title or ""
    if any_na then note = note .. (note ~= "" and "; " or "") .. "grey: n/a" end
    if note ~= "" then text(p, x0 + pw / 2, y + 38, note, ' text-anchor="middle"') end
    if any_na and panel.na then text(p, x0 + pw / 2, y + 52, "(" .. panel.na .. ")", ' text-anchor="middle" font-size="9" fill="#555"') end
    x0 = x0 + pw + gap
  end
  p[#p + 1] = "</svg>"
  return write(path, p)
end

-- profile(path, {title=, x = {labels}, x_title=, series = {{name=, values=, colour=}}, ymin=,
-- ymax=, mark = {at=, label=}, zones = {{from=, to=, label=, fill=}}}): one line per series
-- over the points 0..#x-1 (a series shorter than x stops early: its later points are
-- undefined); mark.at is in those units (2.5 lies between the third and the fourth point)
-- and draws a dashed line; a zone shades [from, to] in the same units, labelled at its top.
-- 640 px wide, more for many points or a long title.
function M.profile(path, spec)
  local xs, series = spec.x, spec.series
  local left, right, top, bottom = 56, 130, 44, 46
  local width = math.max(640, left + right + 14 * #xs, M.text_width(spec.title or "", 14, true) + 24)
  local height = 340
  width = math.ceil(width)
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
  for _, z in ipairs(spec.zones or {}) do
    local a = math.max(left, X(z.from))
    local b = math.min(left + pw, X(z.to))
    if b > a then
      p[#p + 1] = ('<rect x="%s" y="%d" width="%s" height="%d" fill="%s" fill-opacity="0.5"/>'):format(
        num(a), top, num(b - a), ph, z.fill or "#deebf7")
      if z.label then text(p, (a + b) / 2, top + ph - 8, z.label, ' text-anchor="middle" fill="#333"') end
    end
  end
  p[#p + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'):format(left, top, pw, ph)
  for i = 0, 4 do
    local v = lo + (hi - lo) * i / 4
    text(p, left - 6, Y(v) + 4, num(v), ' text-anchor="end"')
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#eee"/>'):format(left, left + pw, num(Y(v)), num(Y(v)))
  end
  local every = math.max(1, math.ceil(18 / (pw / math.max(#xs, 1))))
  for i, label in ipairs(xs) do
    if (i - 1) % every == 0 then text(p, X(i - 1), top + ph + 16, label, ' text-anchor="middle"') end
  end
  if spec.x_title then text(p, left + pw / 2, height - 8, spec.x_title, ' text-anchor="middle"') end
  if spec.mark then
    local x = X(spec.mark.at)
    p[#p + 1] = ('<line x1="%s" x2="%s" y1="%d" y2="%d" stroke="black" stroke-dasharray="5,4"/>'):format(
      num(x), num(x), top, top + ph)
    text(p, x + 4, top - 6, spec.mark.label or "")
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
  for i, note in ipairs(spec.notes or {}) do
    text(p, left + pw + 12, top + 14 + (#series + i - 1) * 18 + 8, note, ' font-size="9" fill="#555"')
  end
  p[#p + 1] = "</svg>"
  return write(path, p)
end

-- ---- line and bar charts (freeze_deep's figures) ------------------------------------------

-- the width a line of text needs at a font size (sans-serif: about 0.6 em per character,
-- 0.65 bold), so that titles and legends are never clipped
local function text_width(s, size, bold)
  return #tostring(s) * size * (bold and 0.65 or 0.6)
end

-- rounded axis ticks over [lo, hi]: about n steps of 1, 2 or 5 times a power of ten
local function ticks(lo, hi, n)
  local raw = (hi - lo) / (n or 5)
  local mag = 10 ^ math.floor(math.log10(raw))
  local step = mag
  for _, k in ipairs{ 1, 2, 5, 10 } do
    if raw <= k * mag then step = k * mag; break end
  end
  local out = {}
  for i = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) do
    out[#out + 1] = i == 0 and 0 or i * step  -- never "-0"
  end
  return out
end
M.ticks = ticks

local palette = { "#238b45", "#cb181d", "#2171b5", "#6a51a3", "#d94801", "#525252" }

local function legend(p, names, x, y, colours, as_box)
  for k, name in ipairs(names) do
    local ly = y + (k - 1) * 18
    if as_box then
      p[#p + 1] = ('<rect x="%s" y="%s" width="14" height="10" fill="%s"/>'):format(num(x), num(ly - 5), colours[k])
    else
      p[#p + 1] = ('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2"/>'):format(
        num(x), num(x + 20), num(ly), num(ly), colours[k])
    end
    text(p, x + 26, ly + 4, name)
  end
end

-- lines(path, {title=, x_title=, y_title=, series = {{name=, values = {v1, v2, ...}, x = {...}?,
-- colour=}}, smooth = k, ymin=, ymax=}): one line per series (x defaults to 1, 2, ...). With
-- smooth = k > 1 a series is drawn as its running mean over k points (the raw points stay as
-- faint dots). Wide enough for its title and legend.
function M.lines(path, spec)
  local series = spec.series
  assert(type(series) == "table" and #series > 0, "svg.lines: series = {{name=, values=}} is required")
  local legend_w = 40
  for _, s in ipairs(series) do legend_w = math.max(legend_w, 40 + text_width(s.name or "", 11)) end
  local left, right, top, bottom = 62, legend_w + 16, 40, 46
  local width = math.max(640, math.ceil(text_width(spec.title or "", 14, true)) + 24)
  local height = 360
  local pw, ph = width - left - right, height - top - bottom
  local xlo, xhi, lo, hi = math.huge, -math.huge, math.huge, -math.huge
  for k, s in ipairs(series) do
    if #s.values == 0 then error(("svg.lines: series %d (%s) has no values"):format(k, tostring(s.name)), 0) end
    for i, v in ipairs(s.values) do
      local x = s.x and s.x[i] or i
      xlo, xhi, lo, hi = math.min(xlo, x), math.max(xhi, x), math.min(lo, v), math.max(hi, v)
    end
  end
  lo, hi = spec.ymin or lo, spec.ymax or hi
  if hi <= lo then hi = lo + 1 end
  if xhi <= xlo then xhi = xlo + 1 end
  local function X(x) return left + (x - xlo) / (xhi - xlo) * pw end
  local function Y(v) return top + (1 - (math.max(lo, math.min(hi, v)) - lo) / (hi - lo)) * ph end
  local p = open_svg(width, height)
  text(p, 8, 20, spec.title or "", ' font-size="14" font-weight="bold"')
  p[#p + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'):format(left, top, pw, ph)
  for _, v in ipairs(ticks(lo, hi, 5)) do
    text(p, left - 6, Y(v) + 4, num(v), ' text-anchor="end"')
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#eee"/>'):format(left, left + pw, num(Y(v)), num(Y(v)))
  end
  for _, x in ipairs(ticks(xlo, xhi, 6)) do text(p, X(x), top + ph + 16, num(x), ' text-anchor="middle"') end
  if spec.x_title then text(p, left + pw / 2, height - 8, spec.x_title, ' text-anchor="middle"') end
  if spec.y_title then
    p[#p + 1] = ('<text x="14" y="%s" transform="rotate(-90 14 %s)" text-anchor="middle">%s</text>'):format(
      num(top + ph / 2), num(top + ph / 2), escape(spec.y_title))
  end
  local k_smooth = math.max(1, math.floor(spec.smooth or 1))
  local colours, names = {}, {}
  for k, s in ipairs(series) do
    local colour = s.colour or palette[(k - 1) % #palette + 1]
    colours[k], names[k] = colour, s.name or ("series " .. k)
    local pts, sum = {}, 0
    for i, v in ipairs(s.values) do
      sum = sum + v - (i > k_smooth and s.values[i - k_smooth] or 0)
      local mean = sum / math.min(i, k_smooth)
      pts[i] = num(X(s.x and s.x[i] or i)) .. "," .. num(Y(mean))
      if k_smooth > 1 then
        p[#p + 1] = ('<circle cx="%s" cy="%s" r="1.2" fill="%s" fill-opacity="0.35"/>'):format(
          num(X(s.x and s.x[i] or i)), num(Y(v)), colour)
      end
    end
    p[#p + 1] = ('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>')
      :format(colour, table.concat(pts, " "), escape(names[k]))
  end
  legend(p, names, left + pw + 12, top + 14, colours, false)
  if k_smooth > 1 then text(p, left + pw + 12, top + 24 + #series * 18, ("mean of %d steps"):format(k_smooth), ' fill="#666"') end
  p[#p + 1] = "</svg>"
  return write(path, p)
end

-- bars(path, {title=, categories = {labels}, series = {{name=, values = {one per category},
-- colour=}}, y_title=, ymin=, ymax=, ref = {value=, label=}}): grouped bars, one group per
-- category, one bar per series in each group, its value printed on top; `ref` a dashed
-- horizontal line (e.g. chance). Wide enough for its title, labels, legend.
function M.bars(path, spec)
  local cats, series = spec.categories, spec.series
  assert(type(cats) == "table" and #cats > 0, "svg.bars: categories = {labels} is required")
  assert(type(series) == "table" and #series > 0, "svg.bars: series = {{name=, values=}} is required")
  local bw = 26  -- room for a "0.33" label on top of each bar
  local group_w = math.max(#series * bw + 16, 16)
  for _, c in ipairs(cats) do group_w = math.max(group_w, text_width(c, 11) + 10) end
  local legend_w = 40
  for _, s in ipairs(series) do legend_w = math.max(legend_w, 40 + text_width(s.name or "", 11)) end
  local left, right, top, bottom = 62, legend_w + 16, 40, 50
  local width = math.max(left + right + #cats * group_w, math.ceil(text_width(spec.title or "", 14, true)) + 24)
  local height = 340
  local pw, ph = width - left - right, height - top - bottom
  group_w = pw / #cats
  local a, b = 0, -math.huge
  for k, s in ipairs(series) do
    for c = 1, #cats do
      local v = s.values[c] or error(("svg.bars: series %d (%s) has no value for '%s'"):format(k, tostring(s.name), cats[c]), 0)
      a, b = math.min(a, v), math.max(b, v)
    end
  end
  local lo, hi = spec.ymin or a, spec.ymax or b
  if hi <= lo then hi = lo + 1 end
  local function Y(v) return top + (1 - (math.max(lo, math.min(hi, v)) - lo) / (hi - lo)) * ph end
  local p = open_svg(width, height)
  text(p, 8, 20, spec.title or "", ' font-size="14" font-weight="bold"')
  for _, v in ipairs(ticks(lo, hi, 5)) do
    text(p, left - 6, Y(v) + 4, num(v), ' text-anchor="end"')
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#eee"/>'):format(left, left + pw, num(Y(v)), num(Y(v)))
  end
  p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#999"/>'):format(left, left + pw, num(Y(lo)), num(Y(lo)))
  if spec.y_title then
    p[#p + 1] = ('<text x="14" y="%s" transform="rotate(-90 14 %s)" text-anchor="middle">%s</text>'):format(
      num(top + ph / 2), num(top + ph / 2), escape(spec.y_title))
  end
  local colours, names = {}, {}
  for k, s in ipairs(series) do colours[k], names[k] = s.colour or palette[(k - 1) % #palette + 1], s.name or ("series " .. k) end
  for c, label in ipairs(cats) do
    local gx = left + (c - 1) * group_w
    local x0 = gx + (group_w - #series * bw) / 2
    for k, s in ipairs(series) do
      local v = s.values[c]
      local y = Y(v)
      p[#p + 1] = ('<rect x="%s" y="%s" width="%d" height="%s" fill="%s"><title>%s, %s: %s</title></rect>'):format(
        num(x0 + (k - 1) * bw), num(y), bw - 2, num(math.max(0, Y(lo) - y)), colours[k], escape(names[k]),
        escape(label), num(v))
      text(p, x0 + (k - 0.5) * bw - 1, y - 3, ("%.2f"):format(v), ' font-size="8" text-anchor="middle"')
    end
    text(p, gx + group_w / 2, top + ph + 16, label, ' text-anchor="middle"')
  end
  if spec.ref then
    local y = Y(spec.ref.value)
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#555" stroke-dasharray="4 3"/>'):format(
      left, left + pw, num(y), num(y))
    text(p, left + pw - 2, y - 3, spec.ref.label or "", ' font-size="9" text-anchor="end" fill="#555"')
  end
  legend(p, names, left + pw + 12, top + 14, colours, true)
  p[#p + 1] = "</svg>"
  return write(path, p)
end

return M

-- lt/scan/charts.lua: the SVG charts of the layer-scan studies that lt.report.svg does not draw:
-- grouped bars with optional error bars (Figures 7 and 8 of *Is One Layer Enough?*), a
-- scatter of two rankings with its fitted line (Figure 3), and contribution bars per layer
-- with the full-training level at 1 (Figure 2). Every mark carries a <title> with its value.
local M = {}
local svg = require "lt.report.svg"

local function esc(s)
  return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub('"', "&quot;"))
end
local function num(v) return ("%.4g"):format(v) end
local palette = { "#2171b5", "#cb181d", "#238b45", "#6a51a3", "#d94801", "#525252" }

local function write(path, parts)
  parts[#parts + 1] = "</svg>"
  local f = assert(io.open(path, "w"))
  f:write(table.concat(parts, "\n"), "\n")
  f:close()
  return path
end

local function frame(width, height, title)
  return {
    ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'):format(width, height),
    ('<rect width="%d" height="%d" fill="white"/>'):format(width, height),
    ('<text x="8" y="20" font-size="14" font-weight="bold">%s</text>'):format(esc(title or "")),
  }
end

-- The range [lo, hi] widened to whole steps of its rounded ticks (lt.report.svg.ticks: 1, 2 or 5
-- times a power of ten), and those ticks.
local function nice(lo, hi)
  if hi <= lo then hi = lo + 1 end
  local t = svg.ticks(lo, hi, 5)
  local step = #t >= 2 and t[2] - t[1] or (hi - lo)
  lo, hi = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
  return lo, hi, svg.ticks(lo, hi, 5)
end

-- y axis over [lo, hi] widened to rounded ticks; returns the value → pixel function
local function y_axis(p, lo, hi, left, top, pw, ph, title)
  local t
  lo, hi, t = nice(lo, hi)
  local function Y(v) return top + (1 - (v - lo) / (hi - lo)) * ph end
  p[#p + 1] = ('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'):format(left, top, pw, ph)
  for _, v in ipairs(t) do
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#eee"/>'):format(left, left + pw, num(Y(v)), num(Y(v)))
    p[#p + 1] = ('<text x="%d" y="%s" text-anchor="end">%s</text>'):format(left - 6, num(Y(v) + 4), num(v))
  end
  if title then
    local x = math.max(14, left - 46)  -- beside the tick labels
    p[#p + 1] = ('<text x="%d" y="%s" transform="rotate(-90 %d %s)" text-anchor="middle">%s</text>')
      :format(x, num(top + ph / 2), x, num(top + ph / 2), esc(title))
  end
  return Y
end

local function range(values, lo, hi)
  local a, b = math.huge, -math.huge
  for _, v in ipairs(values) do
    if v == v then a, b = math.min(a, v), math.max(b, v) end
  end
  if a == math.huge then a, b = 0, 1 end
  return lo or a, hi or b
end

-- bars(path, {title=, y_title=, groups = {labels}, series = {{name=, values = {...},
-- errors = {...}|nil}}, ymin=, ymax=, ref = {value=, label=}}): for each group a bar per
-- series; errors draw ± whiskers; ref draws a dashed horizontal line (e.g. the full model).
function M.bars(path, spec)
  local groups, series = spec.groups, spec.series
  -- group labels are drawn rotated by 35 degrees, ending under their group: room below for
  -- the longest one's height, and on the left for how far the first one reaches
  local label_w = 0
  for _, g in ipairs(groups) do label_w = math.max(label_w, svg.text_width(g, 11)) end
  local sin, cos = math.sin(math.rad(35)), math.cos(math.rad(35))
  local gw0 = #series * 18 + 16
  local legend_w = 0
  for _, s in ipairs(series) do legend_w = math.max(legend_w, svg.text_width(s.name or "", 11)) end
  if spec.ref then legend_w = math.max(legend_w, svg.text_width(spec.ref.label or "", 11) - 18) end
  local left = math.max(60, math.ceil(label_w * cos - gw0 / 2 + 8))
  local right = math.max(150, math.ceil(legend_w + 40))
  local height, top, bottom = 270 + math.max(70, math.ceil(label_w * sin + 26)), 40, math.max(70, math.ceil(label_w * sin + 26))
  local width = math.max(480, left + #groups * gw0 + right, math.ceil(svg.text_width(spec.title or "", 14, true)) + 24)
  local all = {}
  for _, s in ipairs(series) do
    for i, v in ipairs(s.values) do
      all[#all + 1] = v
      if s.errors and s.errors[i] then all[#all + 1] = v + s.errors[i]; all[#all + 1] = v - s.errors[i] end
    end
  end
  if spec.ref then all[#all + 1] = spec.ref.value end
  all[#all + 1] = 0
  local lo, hi = range(all, spec.ymin, spec.ymax)
  local pw, ph = width - left - right, height - top - bottom
  local p = frame(width, height, spec.title)
  local Y = y_axis(p, lo, hi, left, top, pw, ph, spec.y_title)
  local gw = pw / #groups
  local bw = math.min(18, (gw - 12) / #series)
  for g, label in ipairs(groups) do
    local x0 = left + (g - 1) * gw + (gw - bw * #series) / 2
    for k, s in ipairs(series) do
      local v = s.values[g]
      if v and v == v then
        local colour = s.colour or palette[(k - 1) % #palette + 1]
        local x, y1, y0 = x0 + (k - 1) * bw, Y(math.max(v, math.max(lo, 0))), Y(math.min(v, math.max(lo, 0)))
        p[#p + 1] = ('<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s%s</title></rect>'):format(
          num(x), num(y1), num(bw - 2), num(math.max(0.5, y0 - y1)), colour, esc(s.name or ""), esc(label), num(v),
          s.errors and s.errors[g] and (" ± " .. num(s.errors[g])) or "")
        if s.errors and s.errors[g] and s.errors[g] > 0 then
          local cx = x + (bw - 2) / 2
          p[#p + 1] = ('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="black"/>'):format(
            num(cx), num(cx), num(Y(v + s.errors[g])), num(Y(v - s.errors[g])))
        end
      end
    end
    p[#p + 1] = ('<text x="%s" y="%d" text-anchor="end" transform="rotate(-35 %s %d)">%s</text>'):format(
      num(left + (g - 0.5) * gw), top + ph + 14, num(left + (g - 0.5) * gw), top + ph + 14, esc(label))
  end
  if spec.ref then
    local y = Y(spec.ref.value)
    p[#p + 1] = ('<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="black" stroke-dasharray="5,4"/>'):format(left, left + pw, num(y), num(y))
    p[#p + 1] = ('<text x="%d" y="%s">%s</text>'):format(left + pw + 4, num(y + 4), esc(spec.ref.label or ""))
  end
  for k, s in ipairs(series) do
    local ly = top + 30 + (k - 1) * 18
    p[#p + 1] = ('<rect x="%d" y="%d" width="12" height="12" fill="%s"/>'):format(left + pw + 12, ly - 10, s.colour or palette[(k - 1) % #palette + 1])
    p[#p + 1] = ('<text x="%d" y="%d">%s</text>'):format(left + pw + 30, ly, esc(s.name or ""))
  end
  return write(path, p)
end

-- contribution(path, {title=, layers = {l...}, c = {C per layer, same order}}): Figure 2, C_l
-- per layer as bars, the full-training level (C = 1) and the base (C = 0) as lines.
function M.contribution(path, spec)
  local labels = {}
  for i, l in ipairs(spec.layers) do labels[i] = tostring(l) end
  return M.bars(path, { title = spec.title, y_title = "contribution C_l", groups = labels,
                        series = { { name = "layer alone", values = spec.c } },
                        ref = { value = 1, label = "full (C = 1)" } })
end

-- scatter(path, {title=, x_title=, y_title=, points = {{x=, y=, label=}}, fit = true}):
-- Figure 3; fit draws the least-squares line.
function M.scatter(path, spec)
  local width, height, left, right, top, bottom = 480, 420, 60, 30, 40, 50
  local xs, ys = {}, {}
  for i, pt in ipairs(spec.points) do xs[i], ys[i] = pt.x, pt.y end
  local xlo, xhi = range(xs)
  local ylo, yhi = range(ys)
  local padx, pady = (xhi - xlo) * 0.05 + 1e-9, (yhi - ylo) * 0.05 + 1e-9
  xlo, xhi, ylo, yhi = xlo - padx, xhi + padx, ylo - pady, yhi + pady
  local pw, ph = width - left - right, height - top - bottom
  local p = frame(width, height, spec.title)
  local Y = y_axis(p, ylo, yhi, left, top, pw, ph, spec.y_title)
  local function X(v) return left + (v - xlo) / (xhi - xlo) * pw end
  for i = 0, 4 do
    local v = xlo + (xhi - xlo) * i / 4
    p[#p + 1] = ('<text x="%s" y="%d" text-anchor="middle">%s</text>'):format(num(X(v)), top + ph + 16, num(v))
  end
  p[#p + 1] = ('<text x="%s" y="%d" text-anchor="middle">%s</text>'):format(num(left + pw / 2), height - 8, esc(spec.x_title or ""))
  if spec.fit and #xs >= 2 then
    local mx, my, sxy, sxx = 0, 0, 0, 0
    for i = 1, #xs do mx, my = mx + xs[i] / #xs, my + ys[i] / #xs end
    for i = 1, #xs do sxy, sxx = sxy + (xs[i] - mx) * (ys[i] - my), sxx + (xs[i] - mx) ^ 2 end
    if sxx > 0 then
      local b = sxy / sxx
      local a = my - b * mx
      p[#p + 1] = ('<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#cb181d" stroke-dasharray="6,4"/>'):format(
        num(X(xlo)), num(X(xhi)), num(Y(a + b * xlo)), num(Y(a + b * xhi)))
    end
  end
  for _, pt in ipairs(spec.points) do
    p[#p + 1] = ('<circle cx="%s" cy="%s" r="4" fill="#2171b5"><title>%s: (%s, %s)</title></circle>'):format(
      num(X(pt.x)), num(Y(pt.y)), esc(pt.label or ""), num(pt.x), num(pt.y))
    if pt.label then
      p[#p + 1] = ('<text x="%s" y="%s" font-size="9">%s</text>'):format(num(X(pt.x) + 5), num(Y(pt.y) - 4), esc(pt.label))
    end
  end
  return write(path, p)
end

return M

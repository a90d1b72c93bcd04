-- tests/lua/diag_figures.lua: the LayerTracer figures and report lines: heatmaps legible and
-- unclipped from 4 to 64 layers, the final block's ΔJS drawn as n/a, Figure 10's shaded zones
-- at the split, the grid across runs from the store (Figure 4/9), the checks of what was
-- traced, the split ratios and the sign-aware recommendation's text. Geometry is checked
-- against the SVG's own numbers with a conservative width per character (0.7 em bold).
local T = require "lt.test"
local svg = require "lt.report.svg"
local report = require "experiments.layer_tracer.figures"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_diag_figures"
os.execute("rm -rf '" .. tmp .. "' && mkdir -p '" .. tmp .. "'")

local function chars(s)
  local n = 0
  for _ in s:gmatch("[^\128-\191]") do n = n + 1 end
  return n
end

-- {width, height, texts = {{x, y, size, bold, anchor, s}}, rects = {{x, y, w, h, fill, title}}}
local function parse(path)
  local doc = T.read(path)
  local out = { texts = {}, rects = {} }
  out.width = tonumber(doc:match('<svg[^>]- width="([%d.]+)"'))
  out.height = tonumber(doc:match('<svg[^>]- height="([%d.]+)"'))
  for attrs, body in doc:gmatch("<text([^>]*)>(.-)</text>") do
    out.texts[#out.texts + 1] = { x = tonumber(attrs:match(' x="([-%d.e]+)"')), y = tonumber(attrs:match(' y="([-%d.e]+)"')),
      size = tonumber(attrs:match('font%-size="([%d.]+)"')) or 11, bold = attrs:find("bold") ~= nil,
      anchor = attrs:match('text%-anchor="(%a+)"') or "start",
      s = body:gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"'):gsub("&amp;", "&") }
  end
  for line in doc:gmatch("[^\n]+") do  -- one element per line
    local attrs = line:match("^<rect([^>]*)>")
    if attrs then
      out.rects[#out.rects + 1] = { x = tonumber(attrs:match(' x="([-%d.e]+)"')), y = tonumber(attrs:match(' y="([-%d.e]+)"')),
        w = tonumber(attrs:match(' width="([%d.e]+)"')), h = tonumber(attrs:match(' height="([%d.e]+)"')),
        fill = attrs:match(' fill="([^"]+)"'), title = line:match("<title>(.-)</title>") }
    end
  end
  return out
end

-- every text inside the picture horizontally (conservative width)
local function check_unclipped(doc, what)
  for _, t in ipairs(doc.texts) do
    local w = chars(t.s) * t.size * (t.bold and 0.7 or 0.62)
    local a = t.anchor == "middle" and t.x - w / 2 or t.anchor == "end" and t.x - w or t.x
    T.ok(a >= 0 and a + w <= doc.width + 0.5,
         ("%s: text '%s' spans %.0f..%.0f of a %d px picture"):format(what, t.s, a, a + w, doc.width))
  end
end

local function fake_result(n, groups, opts)
  opts = opts or {}
  local r = { n_layers = n, groups = {}, tp = {}, ls = {}, final_djs = opts.final_djs or false }
  local nl = opts.final_djs and n or n - 1
  for g = 1, groups do
    local ratio, djs = {}, {}
    for l = 1, n do ratio[l] = (l * g) % 7 / 7 end
    for l = 1, nl do djs[l] = (l + g) % 5 / 5 end
    r.groups[g] = { group = g, tp_ratio = ratio, ls_djs = djs }
  end
  for l = 1, n do r.tp[l] = (l - 1) / (n - 1) end
  for l = 1, nl do r.ls[l] = 1 - (l - 1) / (nl - 1) end
  r.recommendation = opts.recommendation
  return r
end

T.case("heatmap: titles unclipped and cells legible from 4 to 64 layers", function()
  for _, n in ipairs{ 4, 8, 28, 64 } do
    local path = report.heatmap(fake_result(n, 3), ("%s/heat%d.svg"):format(tmp, n),
                                "LayerTracer: models/tiny-qwen3 (a long model path to check the title)")
    local doc = parse(path)
    check_unclipped(doc, n .. " layers")
    -- the two panel titles do not run into each other
    local titles = {}
    for _, t in ipairs(doc.texts) do
      if t.bold and t.size == 11 then titles[#titles + 1] = t end
    end
    T.eq(#titles, 2, "two panel titles")
    T.ok(titles[1].x + chars(titles[1].s) * 11 * 0.7 <= titles[2].x, "panel titles overlap at " .. n)
    -- cells: 3 rows x n columns per panel, 10..28 px wide, 18 high
    local cells, na = 0, 0
    for _, rct in ipairs(doc.rects) do
      if rct.title then
        cells = cells + 1
        T.ok(rct.w >= 10 and rct.h >= 18, ("cell %.1f x %.1f at %d layers"):format(rct.w, rct.h, n))
        if rct.title:find("n/a", 1, true) then na = na + 1 end
      end
    end
    T.eq(cells, 2 * 3 * n)
    T.eq(na, 3, "one n/a cell per group: the final block's ΔJS")
    -- column labels do not overlap: consecutive labels of one panel further apart than a label
    local labels = {}
    for _, t in ipairs(doc.texts) do
      if t.anchor == "middle" and t.s:match("^%d+$") and t.y < 66 then labels[#labels + 1] = t end
    end
    for i = 2, #labels do
      if labels[i].x > labels[i - 1].x then
        T.ok(labels[i].x - labels[i - 1].x >= chars(labels[i].s) * 11 * 0.62 + 2, "column labels overlap at " .. n)
      end
    end
    T.ok(doc.width <= 1800, ("%d layers: %d px wide"):format(n, doc.width))
  end
  -- with the final block's ΔJS included there is no n/a cell
  local doc = parse(report.heatmap(fake_result(4, 2, { final_djs = true }), tmp .. "/heat_final.svg"))
  for _, rct in ipairs(doc.rects) do T.ok(not (rct.title or ""):find("n/a", 1, true), "no n/a cell") end
end)

T.case("svg.heatmap: a value that is not a number is an error naming the cell", function()
  T.raises(function()
    svg.heatmap(tmp .. "/bad.svg", { rows = { "a" }, cols = { "0", "1" }, panels = { { values = { { 1, "x" } } } } })
  end, "panel 1 row 1 column 2")
end)

T.case("profile: Figure 10 with the shallow and deep zones at the split", function()
  for _, case in ipairs{ { "train_shallow", "#c6dbef", "#d9d9d9", "train", "freeze" },
                         { "train_deep", "#d9d9d9", "#c6dbef", "freeze", "train" } } do
    local n, b = 8, 3
    local r = fake_result(n, 2, { recommendation = { allocation = case[1], b = b, score = 0.5,
                                                     train = { 0, 2 }, freeze = { 3, 7 } } })
    local doc = parse(report.profile(r, ("%s/profile_%s.svg"):format(tmp, case[1])))
    check_unclipped(doc, "profile")
    -- the plot: x = 56 .. width - 130, point i at 56 + i / (n - 1) * pw
    local left, pw = 56, doc.width - 56 - 130
    local zones = {}
    for _, rct in ipairs(doc.rects) do
      if rct.fill == "#c6dbef" or rct.fill == "#d9d9d9" then zones[#zones + 1] = rct end
    end
    T.eq(#zones, 2)
    local split_x = left + (b - 0.5) / (n - 1) * pw
    T.near(zones[1].x, left, 0.01); T.near(zones[1].x + zones[1].w, split_x, 0.01)  -- clipped at the frame
    T.near(zones[2].x, split_x, 0.01); T.near(zones[2].x + zones[2].w, left + pw, 0.01)
    T.eq(zones[1].fill, case[2]); T.eq(zones[2].fill, case[3])
    local text = {}
    for _, t in ipairs(doc.texts) do text[#text + 1] = t.s end
    text = table.concat(text, "|")
    T.ok(text:find("shallow 0..2: " .. case[4], 1, true) and text:find("deep 3..7: " .. case[5], 1, true), text)
    T.ok(text:find("LS: final block n/a", 1, true), "the note on LS's missing last point")
  end
  -- 64 layers: wider, labels thinned, still unclipped
  local doc = parse(report.profile(fake_result(64, 1), tmp .. "/profile64.svg"))
  check_unclipped(doc, "profile 64")
  T.ok(doc.width >= 64 * 14, "room per point")
end)

T.case("grid: Figure 4/9 across runs from the store, rows = models", function()
  local ids = {}
  for k, spec in ipairs{ { "models/a-4", 4 }, { "models/b-6", 6 } } do
    ids[k] = lt.run.child("trace_" .. k, function()
      lt.run.param("model_path", spec[1])
      for g = 1, 2 do
        local ratio, djs = {}, {}
        for l = 1, spec[2] do ratio[l] = l * g end
        for l = 1, spec[2] - 1 do djs[l] = 10 * l + g end
        lt.run.log_layers("tp_ratio", ratio, { grp = g })
        lt.run.log_layers("ls_djs", djs, { grp = g })
      end
      lt.run.flush()
      return lt.run.id()
    end)
  end
  lt.run.flush()
  local doc = parse(report.grid(tmp .. "/grid.svg", { runs = ids }))
  check_unclipped(doc, "grid")
  local by = {}
  for _, rct in ipairs(doc.rects) do
    if rct.title then by[rct.title:match("^(.-): ")] = (by[rct.title:match("^(.-): ")] or 0) + 1 end
  end
  local function cell(label, layer, panel)  -- the value in a cell's title
    local found = {}
    for _, rct in ipairs(doc.rects) do
      local v = rct.title and rct.title:match("^" .. label:gsub("%p", "%%%0") .. ", " .. layer .. ": (.*)$")
      if v then found[#found + 1] = v end
    end
    return found[panel]
  end
  local a, b = ("a-4 (run %d)"):format(ids[1]), ("b-6 (run %d)"):format(ids[2])
  -- Ratio of layer 2 (block 2): mean over groups of l * g = 3 * 1.5 = 4.5; ΔJS of block 0: 10 + 1.5
  T.eq(cell(a, 2, 1), "4.5"); T.eq(cell(b, 5, 1), "9")
  T.eq(cell(a, 0, 2), "11.5")
  -- model a has 4 blocks: its ΔJS of block 3 (final) and both panels' blocks 4, 5 are n/a
  T.ok(cell(a, 3, 2):find("n/a", 1, true), "final block n/a")
  T.ok(cell(a, 4, 1):find("n/a", 1, true) and cell(a, 5, 2):find("n/a", 1, true), "missing blocks n/a")
  T.eq(cell(b, 4, 2), "51.5"); T.ok(cell(b, 5, 2):find("n/a", 1, true), "b's final block n/a")
  T.raises(function() report.grid(tmp .. "/none.svg", { runs = { 99999 } }) end, "run 99999 logged no")
end)

-- a tokenizer of single characters: id = byte
local tok = {
  encode = function(_, s) return { s:byte(1) } end,
  decode = function(_, ids) return string.char(ids[1]) end,
}

T.case("target_report: shares of answer and blank targets, warnings", function()
  local function r_of(targets, final_p)
    local r = { n_layers = 2, samples = {} }
    for i, t in ipairs(targets) do r.samples[i] = { target = t:byte(1), p_target = { [0] = 0, 0, final_p[i] } } end
    return r
  end
  local samples = { { target_text = "Cold" }, { target_text = "Small" }, { target_text = "Dry" }, { target_text = "Up" } }
  -- 3 of 4 targets a space or a comma, one the answer's first token
  local rep = report.target_report(r_of({ " ", ",", " ", "C" }, { 0.5, 0.2, 0.1, 0.4 }), { samples[2], samples[3], samples[4], samples[1] }, tok)
  T.eq(rep.answer, 1); T.eq(rep.with_answer, 4); T.eq(rep.answer_share, 0.25)
  T.eq(rep.blank, 3); T.eq(rep.blank_share, 0.75)
  T.near(rep.final_p, 0.3, 1e-15)  -- a double mean of 4: a rounding or two of 5.6e-17
  T.eq(#rep.warnings, 1)
  T.ok(rep.warnings[1]:find("3 of 4 traced targets are whitespace or punctuation", 1, true), rep.warnings[1])
  -- the answers, but with a tiny final P_t: (0.01 + 0.02 + 0.03 + 0.04) / 4 = 0.025 < 0.05
  rep = report.target_report(r_of({ "C", "S", "D", "U" }, { 0.01, 0.02, 0.03, 0.04 }), samples, tok)
  T.eq(rep.answer_share, 1); T.eq(rep.blank, 0)
  T.eq(#rep.warnings, 1)
  T.ok(rep.warnings[1]:find("final P_t of the targets is 0.025", 1, true), rep.warnings[1])
  -- half blank is not "most"; a healthy P_t: no warning
  rep = report.target_report(r_of({ "C", " ", "D", "." }, { 0.5, 0.5, 0.5, 0.5 }), samples, tok)
  T.eq(rep.answer, 2); T.eq(#rep.warnings, 0)
end)

T.case("split ratios: fractions or decimals", function()
  T.same_table(report.parse_ratios("1/3,1/2,2/3"), { 1 / 3, 1 / 2, 2 / 3 })
  T.same_table(report.parse_ratios("0.25, 0.5"), { 0.25, 0.5 })
  T.raises(function() report.parse_ratios("1/3,3/2") end, "'3/2'")
  T.raises(function() report.parse_ratios("0") end, "'0'")
  T.raises(function() report.parse_ratios("x") end, "'x'")
end)

T.case("recommendation lines: b, the ranges, and the reverse allocation when every S(b) < 0", function()
  local r = { n_layers = 4, splits = { { b = 1, score = -0.66, ratio = 1 / 3 }, { b = 2, score = -0.52, ratio = 0.5 } },
              recommendation = { allocation = "train_deep", b = 1, score = -0.66, train = { 1, 3 }, freeze = { 0, 0 } } }
  local text = table.concat(report.recommendation_lines(r), "\n")
  T.ok(text:find("S(b=1) =  -0.660", 1, true), text)
  T.ok(text:find("every S(b) < 0: the reverse allocation is favoured", 1, true), text)
  T.ok(text:find("train deep blocks 1..3, freeze shallow block 0", 1, true), text)
  r.recommendation = { allocation = "train_shallow", b = 2, score = 0.4, train = { 0, 1 }, freeze = { 2, 3 } }
  text = table.concat(report.recommendation_lines(r), "\n")
  T.ok(text:find("recommended (S(b=2) = 0.400 > 0): train shallow blocks 0..1, freeze deep blocks 2..3", 1, true), text)
  r.recommendation = nil
  T.ok(report.recommendation_lines(r)[3]:find("no split", 1, true), "no split")
end)

T.finish()

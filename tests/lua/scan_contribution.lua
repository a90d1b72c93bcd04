-- tests/lua/scan_contribution.lua: contributions C_l = (S_l − S_base)/(S_full − S_base),
-- ranking, the Table-7-like summary and --layers parsing against hand-computed values; the
-- scan's runs gathered from the store (latest ok run per job); the charts and config hash.
local T = require "lt.test"
local ls = require "lt.layer_scan"

T.case("contributions by hand; undefined when full training does not move the score", function()
  -- S_base 0.40, S_full 0.60: gap 0.2
  local c = ls.contributions({ [0] = 0.50, [1] = 0.40, [2] = 0.65, [3] = 0.30 }, 0.40, 0.60)
  T.near(c[0], 0.5, 1e-12)      -- 0.10 / 0.2
  T.near(c[1], 0.0, 1e-12)
  T.near(c[2], 1.25, 1e-12)     -- 0.25 / 0.2
  T.near(c[3], -0.5, 1e-12)     -- −0.10 / 0.2
  local none, why = ls.contributions({ [0] = 0.5 }, 0.40, 0.405, 0.01)
  T.eq(none, nil)
  T.ok(why:find("undefined"), why)
  T.ok(ls.contributions({ [0] = 0.5 }, 0.40, 0.40) == nil, "a zero gap is undefined with the default min_gap")
  -- full training made things worse: C keeps its meaning (share of the full change)
  local neg = ls.contributions({ [0] = 0.35 }, 0.40, 0.30)
  T.near(neg[0], 0.5, 1e-12)
end)

T.case("ranking, thirds and the Table 7 summary by hand", function()
  local c = { [0] = 0.2, [1] = 1.1, [2] = 0.9, [3] = 1.1, [4] = -0.3, [5] = 1.0, [6] = 0.5, [7] = 0.1, [8] = 0.0 }
  T.same_table(ls.ranking(c), { 1, 3, 5, 2, 6, 0, 7, 8, 4 })  -- ties (1, 3): lower layer first
  -- 9 blocks: thirds are 0..2, 3..5, 6..8
  T.same_table({ ls.third(2, 9), ls.third(3, 9), ls.third(5, 9), ls.third(6, 9) }, { 0, 1, 1, 2 })
  -- 28 blocks: floor(3l/28): the middle third is 10..18
  T.same_table({ ls.third(9, 28), ls.third(10, 28), ls.third(18, 28), ls.third(19, 28) }, { 0, 1, 1, 2 })
  local s = ls.summary(c, 9, 3)
  T.eq(s.best, 1); T.eq(s.best_c, 1.1)
  T.eq(s.worst, 4); T.eq(s.worst_c, -0.3)
  T.eq(s.n_ge_1, 3)                 -- 1.1, 1.1, 1.0
  T.same_table(s.top, { 1, 3, 5 })  -- layer 1 is shallow, 3 and 5 middle
  T.eq(s.middle, 2)
  T.near(s.middle_share, 2 / 3, 1e-12)
end)

T.case("--layers specs", function()
  T.same_table(ls.parse_layers("all", 4), { 0, 1, 2, 3 })
  T.same_table(ls.parse_layers("5,0,3", 8), { 0, 3, 5 })
  T.same_table(ls.parse_layers("2-4,7,3", 8), { 2, 3, 4, 7 })
  T.raises(function() ls.parse_layers("9", 8) end, "outside 0..7")
  T.raises(function() ls.parse_layers("4-2", 8) end, "backwards")
  T.raises(function() ls.parse_layers("x", 8) end, "expected all")
end)

T.case("mean and sample std", function()
  local m, s = ls.mean_std{ 2, 4, 4, 4, 5, 5, 7, 9 }
  T.near(m, 5, 1e-12)  -- double sums of 8 small numbers: exact or a rounding of 1e-16
  T.near(s, math.sqrt(32 / 7), 1e-12)  -- squared deviations sum to 32
  local m1, s1 = ls.mean_std{ 3 }
  T.eq(m1, 3); T.eq(s1, 0)
end)

T.case("gather: the latest ok run of each job with this scan key", function()
  local function job(name, key, score, fail)
    local ok = pcall(lt.run.child, name, function()
      lt.run.param("scan_key", key)
      lt.run.log("score", score)
      lt.run.log("score/bench_a", score / 2)
      if fail then error("boom") end
    end)
    return ok
  end
  job("base", "k1", 0.4)
  job("full", "k1", 0.6)
  job("layer_0", "k1", 0.5)
  job("layer_1", "k1", 0.1)
  job("layer_1", "k1", 0.45)        -- a later ok run (resumed) wins
  job("layer_2", "k1", 0.9, true)   -- failed: not counted
  job("layer_0", "k2", 0.0)         -- another scan
  local g = ls.gather("k1", { "base", "full", "layer_0", "layer_1", "layer_2" })
  T.eq(g.base.score, 0.4)
  T.eq(g.full.score, 0.6)
  T.eq(g.layers[0].score, 0.5)
  T.eq(g.layers[1].score, 0.45)
  T.eq(g.layers[0].by_bench.bench_a, 0.25)
  T.eq(g.layers[2], nil)
  T.same_table(g.missing, { "layer_2" })
end)

T.case("charts: one mark per value, titles carry the values; the config hash is FNV-1a", function()
  local charts = require "lt.scan_charts"
  local dir = (os.getenv("LTRUN_TEST_TMP") or "/tmp") .. "/scan_charts_" .. lt.proc.pid()
  require("lt.scan").mkdir(dir)
  local svg = T.read(charts.bars(dir .. "/b.svg", { title = "t", groups = { "full", "only_best" },
    series = { { name = "score", values = { 0.5, 0.25 }, errors = { 0.1, 0 } } }, ref = { value = 0.5, label = "full" } }))
  T.ok(svg:find("^<svg") and svg:find("</svg>%s*$"), "a whole SVG document")
  local _, bars = svg:gsub("<rect [^>]*><title>", "")
  T.eq(bars, 2)
  T.ok(svg:find("only_best: 0.25 ± 0</title>", 1, true), "bar title")
  T.ok(svg:find("full: 0.5 ± 0.1</title>", 1, true), "error in the title")
  -- long group labels (drawn at -35 degrees, ending under their group) stay inside the picture
  local long = T.read(charts.bars(dir .. "/long.svg", { title = "t", groups = { "self-consistency (full, k=8)", "b" },
    series = { { name = "accuracy", values = { 0.55, 0.5 } } } }))
  local w, h = long:match('<svg[^>]- width="(%d+)" height="(%d+)"')
  w, h = tonumber(w), tonumber(h)
  local n_labels = 0
  for x, y, label in long:gmatch('<text x="([%d.]+)" y="([%d.]+)" text%-anchor="end" transform="rotate%(%-35[^"]*">([^<]*)<') do
    local tw = require("lt.svg").text_width(label, 11)
    T.ok(tonumber(x) - tw * math.cos(math.rad(35)) >= 0, "label reaches past the left edge: " .. label)
    T.ok(tonumber(y) + tw * math.sin(math.rad(35)) <= h, "label reaches past the bottom: " .. label)
    n_labels = n_labels + 1
  end
  T.eq(n_labels, 2)
  T.ok(w >= 480, "width")
  local sc = T.read(charts.scatter(dir .. "/s.svg", { points = { { x = 1, y = 2, label = "0" }, { x = 2, y = 3, label = "1" },
                                                                   { x = 3, y = 5, label = "2" } }, fit = true }))
  local _, pts = sc:gsub("<circle", "")
  T.eq(pts, 3)
  T.ok(sc:find("stroke-dasharray", 1, true), "the fitted line")
  local scan = require "lt.scan"
  T.eq(scan.hash(""), "811c9dc5")        -- FNV-1a offset basis
  T.eq(scan.hash("a"), "e40c292c")       -- published FNV-1a test vectors
  T.eq(scan.hash("foobar"), "bf9cf968")
  scan.remove_tree(dir)
end)


T.case("self-consistency: majority of each item's samples by hand (math equivalence, ties, abstentions)", function()
  local items = { { id = "a", answer = "12" }, { id = "b", answer = "5" }, { id = "c", answer = "4" },
                  { id = "d", answer = "9" } }
  -- samples given out of order: the vote follows the sample number, not the row order
  local results = {
    { id = "a", sample = 2, prediction = "12.0" }, { id = "a", sample = 0, prediction = "7" },
    { id = "a", sample = 1, prediction = "12" },   { id = "a", sample = 3, prediction = "" },
    { id = "b", sample = 1, prediction = "5" },    { id = "b", sample = 0, prediction = "3" },
    { id = "c", sample = 0, prediction = "" },     { id = "c", sample = 1, prediction = "" },
    { id = "c", sample = 2, prediction = "4" },
    { id = "d", sample = 0, prediction = "" },     { id = "d", sample = 1, prediction = "" },
  }
  local acc, voted = require("lt.tasks.math").majority(results, items)
  -- a: 12 and 12.0 are one answer with 2 votes against 7's 1 (right); b: 3 and 5 tie, the
  -- earlier sample's 3 wins (wrong); c: the empty answers abstain, 4 (right); d: no answer
  T.near(acc, 2 / 4, 1e-12)
  T.eq(voted.a, "12")
  T.eq(voted.b, "3")
  T.eq(voted.c, "4")
  T.eq(voted.d, "")
end)

T.case("C on the overall score against each benchmark's C_l: Pearson by hand", function()
  -- overall C (0.5, 0, 1.25, -0.5) against two benchmarks' C_l; Pearson by the textbook sum
  -- formula in double precision (python3): 0.9967905774402657 and -0.1797491205220151
  local c = { [0] = 0.5, [1] = 0.0, [2] = 1.25, [3] = -0.5 }
  ls.overall_vs_benchmarks(c, { 0, 1, 2, 3 }, { a = { 0.4, 0.1, 1.0, -0.2 }, b = { 1.0, 0.5, 0.0, 0.25 },
                                               short = { 0.1, 0.2 } })
  lt.run.flush()
  local got = {}
  for _, r in ipairs(lt.run.query("SELECT name, value FROM metrics WHERE run_id = ? AND name LIKE 'contribution_pearson/%'",
                                  lt.run.id())) do
    got[r.name] = r.value
  end
  T.near(got["contribution_pearson/a"], 0.9967905774402657, 1e-12)
  T.near(got["contribution_pearson/b"], -0.1797491205220151, 1e-12)
  T.eq(got["contribution_pearson/short"], nil, "a benchmark without C for every layer is left out")
end)

T.case("GRPO options of a scan: resolved by algorithm, bad values named", function()
  local st = require "lt.scan_task"
  local g = st.grpo_options{ algo = "grpo", kl = -1, agg = "paper", clip_ratio = 0.1, clip_high = 0 }
  T.same_table({ g.kl, g.agg, g.clip_high }, { 0.001, "seq-mean-token-mean", 0.1 })
  local d = st.grpo_options{ algo = "dr_grpo", kl = -1, agg = "paper" }
  T.same_table({ d.kl, d.agg }, { 0, "seq-mean-token-sum-norm" })
  T.raises(function() st.grpo_options{ algo = "grpo", kl = -0.5 } end, "%-%-kl=%-0.5")
  T.same_table(st.sweep_lrs{ algo = "grpo", lr_sweep = "1e-5,3e-3" }, { 1e-5, 3e-3 })
  T.raises(function() st.sweep_lrs{ algo = "grpo", lr_sweep = "1e-5,abc" } end, "'abc' is not a learning rate")
  T.raises(function() st.sweep_lrs{ algo = "grpo", lr_sweep = "0" } end, "'0' is not a learning rate")
  T.raises(function() st.sweep_lrs{ algo = "causal_lm", lr_sweep = "1e-3" } end, "causal_lm scans have none")
end)

T.case("scan defaults by algorithm", function()
  local st = require "lt.scan_task"
  -- the default model is lt.models' tiny-math-8l: a stand-in in a models folder of this test
  local models = os.getenv("LTRUN_TEST_TMP") .. "/lua_scan_contribution_models"
  lt.fs.remove(models)
  lt.fs.mkdir(models)
  lt.model.new{ out = models .. "/tiny-math-8l", layers = 1, hidden = 16, heads = 2, kv_heads = 1, vocab = 300 }
  lt.models.folder = models
  local g = st.defaults{ algo = "grpo", model = "", data = "", bench = "", bench_limit = 0, lr = 0, micro_batch = 0 }
  lt.models.folder = nil
  T.same_table({ g.model, g.data, g.bench, g.lr }, { models .. "/tiny-math-8l", "math", "math_heldout", 1e-4 })
  local c = st.defaults{ algo = "causal_lm", model = "m", data = "", bench = "", bench_limit = 5, lr = 0.5, micro_batch = 0 }
  T.same_table({ c.model, c.data, c.bench, c.bench_limit, c.lr, c.micro_batch }, { "m", "antonyms", "antonyms_heldout", 5, 0.5, 8 })
  T.same_table({ st.bench_name("math_heldout") }, { "math_heldout", "generate", "math" })
end)
T.finish()

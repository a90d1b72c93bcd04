-- tests/lua/scan_contribution.lua: contributions C_l = (S_l − S_base)/(S_full − S_base),
-- ranking, the Table-7-like summary and --layers parsing against hand-computed values; the
-- scan's runs gathered from the store (latest ok run per job); the charts and config hash.
local T = require "lt.test"
local ls = require "lt.scan.contributions"

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
  local charts = require "lt.scan.charts"
  local dir = (os.getenv("LTRUN_TEST_TMP") or "/tmp") .. "/scan_charts_" .. lt.proc.pid()
  require("lt.scan.workers").mkdir(dir)
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
    local tw = require("lt.report.svg").text_width(label, 11)
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
  local scan = require "lt.scan.workers"
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

-- Table 2 of *Is One Layer Enough?*, Qwen3-1.7B-Base: the four math benchmarks (MATH500, GSM8K,
-- OlympiadBench, AMC) and the three out-of-domain category scores (Code, Reasoning, Language),
-- each out-of-domain category given here as one benchmark of it
local table2 = {
  base = { 57.4, 74.4, 18.7, 26.1, 34.9, 20.7, 41.7 }, full = { 64.0, 82.0, 26.9, 30.2, 33.5, 22.6, 48.2 },
  [1] = { 64.4, 79.4, 25.9, 30.2, 40.0, 22.7, 47.1 }, [7] = { 64.0, 80.1, 24.9, 29.0, 38.1, 22.4, 46.5 },
  [10] = { 68.6, 80.5, 27.3, 30.8, 34.6, 21.9, 47.2 }, [12] = { 65.6, 81.3, 27.3, 32.4, 36.2, 21.5, 47.4 },
  [24] = { 60.6, 74.8, 21.2, 27.6, 30.6, 21.6, 44.2 } }
local table2_benches = { "math500:m.jsonl", "gsm8k:g.jsonl", "olympiadbench:o.jsonl", "amc:a.jsonl",
                         "humaneval:h.jsonl", "gpqa:q.jsonl", "ifeval:i.jsonl" }
local function table2_scores(row)
  local out = {}
  for i, b in ipairs(table2_benches) do out[b] = table2[row][i] end
  return out
end

T.case("overall score = mean of the category means; Table 2's layer-10 arithmetic", function()
  local st = require "lt.scan.task"
  local s, overall, means, cats = st.category_scores(table2_scores("base"), "math")
  T.near(s, 44.15, 1e-9)                         -- Table 2's Avg 44.1 (the paper rounds)
  T.near(overall, (44.15 + 34.9 + 20.7 + 41.7) / 4, 1e-9)
  T.ok(math.abs(overall - 35.4) <= 0.05, "base overall 35.4 within the table's rounding: " .. overall)
  T.same_table(cats, { "math", "code", "reasoning", "language" })
  T.near(means.language, 41.7, 1e-12)
  -- not the plain mean over the benchmarks (39.13 here)
  T.ok(math.abs(overall - (57.4 + 74.4 + 18.7 + 26.1 + 34.9 + 20.7 + 41.7) / 7) > 3, "category means, not benchmarks")
  -- layer 10: overall 38.875 (table 38.9), full 38.76875 (38.8); C^overall = 3.5125 / 3.40625
  local _, o10 = st.category_scores(table2_scores(10), "math")
  local _, ofull = st.category_scores(table2_scores("full"), "math")
  T.ok(math.abs(o10 - 38.9) <= 0.05 and math.abs(ofull - 38.8) <= 0.05, "overall of layer 10 and full")
  local c = ls.contributions({ [10] = o10 }, overall, ofull)
  T.near(c[10], 3.5125 / 3.40625, 1e-9)
  T.ok(math.abs(c[10] - 1.03) < 0.005, "Table 2: C^overall of layer 10 is 1.03")
  -- the paper's own arithmetic: (38.9 − 35.4) / (38.8 − 35.4) = 1.029 → 1.03; and every row of
  -- Table 2's overall C from its printed overall scores
  local paper = ls.contributions({ [10] = 38.9, [12] = 39.2, [1] = 39.9, [7] = 39.1, [24] = 35.6 }, 35.4, 38.8)
  for l, want in pairs{ [10] = 1.03, [12] = 1.12, [1] = 1.32, [7] = 1.09, [24] = 0.06 } do
    T.ok(math.abs(paper[l] - want) < 0.005, ("layer %d: C^overall %.4f, Table 2 %.2f"):format(l, paper[l], want))
  end
  -- the in-domain score ranks: no math benchmark is an error; a benchmark with no category too
  T.raises(function() st.category_scores({ ["ifeval:i.jsonl"] = 1 }, "math") end, "no math benchmark")
  T.raises(function() st.category_scores({ ["nope:x"] = 1 }, "math") end, "'nope' has no category")
  -- a benchmark's side metric (score/<bench>/greedy) is not a benchmark
  local s2 = st.category_scores({ math_heldout = 0.5, ["math_heldout/greedy"] = 0.9 }, "math")
  T.eq(s2, 0.5)
end)

T.case("a scan's summary: in-domain C, overall C and the Pearson r, from the store", function()
  for _, job in ipairs{ "base", "full", "layer_1", "layer_7", "layer_10", "layer_12", "layer_24" } do
    lt.run.child(job, function()
      lt.run.param("scan_key", "t2")
      local row = table2[job:match("%d+$") and tonumber(job:match("%d+$")) or job]
      local acc = {}
      for i, b in ipairs(table2_benches) do acc[b] = row[i]; lt.run.log("score/" .. b, row[i]) end
      require("lt.scan.task").log_scores(acc, "math")
    end)
  end
  lt.run.flush()
  local layers = { 1, 7, 10, 12, 24 }
  local jobs = { "base", "full" }
  for _, l in ipairs(layers) do jobs[#jobs + 1] = "layer_" .. l end
  local g = ls.gather("t2", jobs)
  T.same_table(g.missing, {})
  T.near(g.base.score, 44.15, 1e-9)  -- S is the in-domain score
  local scores = {}
  for _, l in ipairs(layers) do scores[l] = g.layers[l].score end
  local c = ls.contributions(scores, g.base.score, g.full.score)
  T.near(c[10], 7.65 / 6.625, 1e-9)  -- (51.8 − 44.15) / (50.775 − 44.15)
  local res = ls.overall_contribution({ task = "math", min_gap = 0.02 }, g, layers, c)
  T.near(res.c[10], 3.5125 / 3.40625, 1e-9)
  T.near(res.c[24], (35.6125 - 35.3625) / 3.40625, 1e-9)
  -- Pearson of (0.8792, 0.8075, 1.1547, 1.1321, 0.2868) and (1.3450, 1.1046, 1.0312, 1.1229,
  -- 0.0734), the textbook sum formula in double precision (python3): 0.8225035234175215
  T.near(res.r, 0.8225035234175215, 1e-9)
  local text = table.concat(res.lines, "\n")
  T.ok(text:find("overall = mean of the category means (math, code, reasoning, language): base 35.3625", 1, true), text)
  T.ok(text:find("layer       in-domain C    overall C", 1, true), text)
  T.ok(text:find("10                1.155        1.031", 1, true), text)
  T.ok(text:find("Pearson r(C_l, C_l^overall) = 0.823", 1, true), text)
  lt.run.flush()
  local got = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = 'contribution_pearson_overall'", lt.run.id())[1]
  T.near(got.value, 0.8225035234175215, 1e-9)
  local n = lt.run.query("SELECT count(*) AS n FROM layer_metrics WHERE run_id = ? AND name = 'contribution_overall'", lt.run.id())[1]
  T.eq(n.n, 5)
  -- a scan stored with a benchmark that has no category: the overall C is said to be missing,
  -- the rest of the analysis goes on
  local odd = { base = { by_bench = { bench_a = 0.1 } }, full = { by_bench = { bench_a = 0.2 } },
                layers = { [0] = { by_bench = { bench_a = 0.15 } } } }
  local r = ls.overall_contribution({ task = "math", min_gap = 0.02 }, odd, { 0 }, { [0] = 0.5 })
  T.ok(r.lines[1]:find("not computed: .*'bench_a' has no category"), r.lines[1])
end)

T.case("GRPO options of a scan: resolved by algorithm, bad values named", function()
  local st = require "lt.scan.task"
  local g = st.grpo_options{ algo = "grpo", kl = -1, agg = "paper", clip_ratio = 0.1, clip_high = 0 }
  T.same_table({ g.kl, g.agg, g.clip_high }, { 0.001, "seq-mean-token-mean", 0.1 })
  local d = st.grpo_options{ algo = "dr_grpo", kl = -1, agg = "paper" }
  T.same_table({ d.kl, d.agg }, { 0, "seq-mean-token-sum-norm" })
  T.raises(function() st.grpo_options{ algo = "grpo", kl = -0.5 } end, "%-%-kl=%-0.5")
  T.same_table(st.sweep_lrs{ algo = "grpo", lr_sweep = "1e-5,3e-3" }, { 1e-5, 3e-3 })
  T.raises(function() st.sweep_lrs{ algo = "grpo", lr_sweep = "1e-5,abc" } end, "'abc' is not a learning rate")
  T.raises(function() st.sweep_lrs{ algo = "grpo", lr_sweep = "0" } end, "'0' is not a learning rate")
  -- every task and algorithm sweeps (the reported score picks the rate)
  T.same_table(st.sweep_lrs{ algo = "causal_lm", lr_sweep = "1e-3" }, { 1e-3 })
  T.same_table(st.sweep_lrs{ task = "agent", algo = "gigpo", lr_sweep = "1e-4,1e-3" }, { 1e-4, 1e-3 })
end)

T.case("scan defaults by algorithm", function()
  local st = require "lt.scan.task"
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

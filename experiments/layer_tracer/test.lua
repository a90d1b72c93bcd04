-- experiments/layer_tracer/test.lua (ctest lua.layer_tracer):
-- experiments/layer_tracer/layer_tracer.lua end to end on a tiny model and a TSV of pairs, in this
-- run: its layer_metrics, split scores, artifacts, and the named query
-- experiments/layer_tracer/layer_tracer.sql over them.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/experiments/layer_tracer/test%.lua$")
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_diag_experiment"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp .. "/m", arch = "llama", layers = 4, hidden = 32, heads = 4, kv_heads = 2,
              vocab = 300, seed = 2 }


local study = require "experiments.layer_tracer.layer_tracer"
study.run{ model = tmp .. "/m", data = root .. "/tests/data/diag/antsyn.tsv", samples = 12, groups = 3, examples = 1,
           out = tmp .. "/out" }
lt.run.flush()
local run = lt.run.id()

T.case("layer_metrics per layer and group", function()
  for _, name in ipairs{ "p_target", "tp_ratio", "js" } do
    local rows = lt.run.query("SELECT count(*) AS n, count(DISTINCT grp) AS g, min(layer) AS lo, max(layer) AS hi " ..
                              "FROM layer_metrics WHERE run_id = ? AND name = ?", run, name)
    T.eq(rows[1].n, 12, name); T.eq(rows[1].g, 3, name); T.eq(rows[1].lo, 0, name); T.eq(rows[1].hi, 3, name)
  end
  -- the final block's ΔJS is undefined: blocks 0..2 only
  local rows = lt.run.query("SELECT count(*) AS n, max(layer) AS hi FROM layer_metrics " ..
                            "WHERE run_id = ? AND name = 'ls_djs'", run)
  T.eq(rows[1].n, 9); T.eq(rows[1].hi, 2)
  local prof = lt.run.query("SELECT count(*) AS n, max(value) AS hi FROM layer_metrics " ..
                            "WHERE run_id = ? AND name = 'tp_profile'", run)
  T.eq(prof[1].n, 4); T.eq(prof[1].hi, 1)
end)

T.case("split scores with b as the step", function()
  local rows = lt.run.query("SELECT step, value FROM metrics WHERE run_id = ? AND name = 'split_score' " ..
                            "ORDER BY step", run)
  -- b = round(r * 4) for r = 1/3, 1/2, 2/3: 1, 2, 3, and 3 lowered to 2 (block 3 alone has no ΔJS)
  T.eq(#rows, 2)
  T.eq(rows[1].step, 1); T.eq(rows[2].step, 2)
end)

T.case("what was traced and the recommendation are logged", function()
  local function metric(name)
    local rows = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = ?", run, name)
    return rows[1] and rows[1].value
  end
  local share, blank, final_p = metric("target_answer_share"), metric("target_blank_share"), metric("final_p_target")
  T.ok(share and share >= 0 and share <= 1, "target_answer_share")
  T.ok(blank and blank >= 0 and blank <= 1, "target_blank_share")
  T.ok(final_p and final_p > 0 and final_p <= 1, "final_p_target")
  -- allocation by the sign of the logged S(b): 1 if any > 0, -1 if all < 0
  local scores = lt.run.query("SELECT max(value) AS hi, min(value) AS lo FROM metrics WHERE run_id = ? " ..
                              "AND name = 'split_score'", run)[1]
  T.eq(metric("allocation"), scores.hi > 0 and 1 or scores.hi < 0 and -1 or 0)
  local b = lt.run.query("SELECT step FROM metrics WHERE run_id = ? AND name = 'split_score' AND value = ?", run,
                         scores.hi > 0 and scores.hi or scores.lo)[1].step
  T.eq(metric("split_b"), b)
  T.eq(lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'model_path'", run)[1].value, tmp .. "/m")
end)

T.case("artifacts: heatmap, profile, per-sample JSON", function()
  local rows = lt.run.query("SELECT kind, path FROM artifacts WHERE run_id = ? ORDER BY path", run)
  T.eq(#rows, 3)
  local kinds = {}
  for _, r in ipairs(rows) do kinds[#kinds + 1] = r.kind end
  T.same_table(kinds, { "svg", "svg", "json" })
  local heat = T.read(rows[1].path)
  T.ok(heat:find("Task Particle: Ratio", 1, true), "the heatmap")
  local na = 0
  for _ in heat:gmatch("<title>[^<]*: n/a") do na = na + 1 end
  T.eq(na, 3, "the final block's ΔJS is n/a in each of the 3 groups")
  local samples = lt.json.decode(T.read(rows[3].path))
  T.eq(#samples, 12)
  T.eq(#samples[1].p_target, 5)  -- residuals 0..4
  T.eq(#samples[1].tp_ratio, 4)
  T.eq(#samples[1].ls_djs, 3)
  T.ok(samples[1].prompt:match("^Example:%l+%->%u%l*; Query:%l+%->$"), samples[1].prompt)
end)

T.case("ltrun sql @layer_tracer: one row per layer", function()
  local rows = lt.run.query(T.read(root .. "/experiments/layer_tracer/layer_tracer.sql"))
  T.eq(#rows, 4)
  T.eq(rows[1].run_id, run); T.eq(rows[1].layer, 0); T.eq(rows[4].layer, 3); T.eq(rows[1].groups, 3)
  T.ok(rows[2].split_score_after ~= nil, "S(b = 2) is on layer 1's row")
end)

T.case("--grid draws Figure 4/9 across the store's LayerTracer runs", function()
  study.run{ grid = tostring(run), out = tmp .. "/out" }
  lt.run.flush()
  local rows = lt.run.query("SELECT path FROM artifacts WHERE run_id = ? AND path LIKE '%grid.svg'", lt.run.id())
  T.eq(#rows, 1)
  local doc = T.read(rows[1].path)
  T.ok(doc:find("m (run " .. run .. ")", 1, true), "the row is labelled by the model folder and run")
  T.raises(function() study.run{ grid = "x" } end, "'x' is not a run id")
end)

T.finish()

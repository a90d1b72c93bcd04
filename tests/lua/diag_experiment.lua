-- tests/lua/diag_experiment.lua: experiments/layer_tracer.lua end to end on a tiny model and
-- a TSV of pairs, in this run: its layer_metrics, split scores, artifacts, and the named
-- query db/queries/layer_tracer.sql over them.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$")
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_diag_experiment"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp .. "/m", arch = "llama", layers = 4, hidden = 32, heads = 4, kv_heads = 2,
              vocab = 300, seed = 2 }


arg = { "--model=" .. tmp .. "/m", "--data=" .. root .. "/tests/data/diag/antsyn.tsv", "--samples=12",
        "--groups=3", "--examples=1", "--out=" .. tmp .. "/out" }
dofile(root .. "/experiments/layer_tracer.lua")
lt.run.flush()
local run = lt.run.id()

T.case("layer_metrics per layer and group", function()
  for _, name in ipairs{ "p_target", "tp_ratio", "js", "ls_djs" } do
    local rows = lt.run.query("SELECT count(*) AS n, count(DISTINCT grp) AS g, min(layer) AS lo, max(layer) AS hi " ..
                              "FROM layer_metrics WHERE run_id = ? AND name = ?", run, name)
    T.eq(rows[1].n, 12, name); T.eq(rows[1].g, 3, name); T.eq(rows[1].lo, 0, name); T.eq(rows[1].hi, 3, name)
  end
  local prof = lt.run.query("SELECT count(*) AS n, max(value) AS hi FROM layer_metrics " ..
                            "WHERE run_id = ? AND name = 'tp_profile'", run)
  T.eq(prof[1].n, 4); T.eq(prof[1].hi, 1)
end)

T.case("split scores with b as the step", function()
  local rows = lt.run.query("SELECT step, value FROM metrics WHERE run_id = ? AND name = 'split_score' " ..
                            "ORDER BY step", run)
  T.eq(#rows, 3)  -- b = round(r * 4) for r = 0.33, 0.5, 0.66
  T.eq(rows[1].step, 1); T.eq(rows[2].step, 2); T.eq(rows[3].step, 3)
end)

T.case("artifacts: heatmap, profile, per-sample JSON", function()
  local rows = lt.run.query("SELECT kind, path FROM artifacts WHERE run_id = ? ORDER BY path", run)
  T.eq(#rows, 3)
  local kinds = {}
  for _, r in ipairs(rows) do kinds[#kinds + 1] = r.kind end
  T.same_table(kinds, { "svg", "svg", "json" })
  T.ok(T.read(rows[1].path):find("Task Particle: Ratio", 1, true), "the heatmap")
  local samples = lt.json.decode(T.read(rows[3].path))
  T.eq(#samples, 12)
  T.eq(#samples[1].p_target, 5)  -- residuals 0..4
  T.eq(#samples[1].tp_ratio, 4)
  T.ok(samples[1].prompt:match("^Example:%l+%->%u%l*; Query:%l+%->$"), samples[1].prompt)
end)

T.case("ltrun sql @layer_tracer: one row per layer", function()
  local rows = lt.run.query(T.read(root .. "/db/queries/layer_tracer.sql"))
  T.eq(#rows, 4)
  T.eq(rows[1].run_id, run); T.eq(rows[1].layer, 0); T.eq(rows[4].layer, 3); T.eq(rows[1].groups, 3)
  T.ok(rows[2].split_score_after ~= nil, "S(b = 2) is on layer 1's row")
end)

T.finish()

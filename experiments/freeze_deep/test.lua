-- experiments/freeze_deep/test.lua (ctest lua.freeze_deep): experiments/freeze_deep/freeze_deep.lua
-- end to end on a tiny model with a few steps (a smaller model than the default base): the four
-- child runs, what each may train (blocks, and embeddings / final norm + head when frozen by the
-- flags), frozen weights untouched, new- and old-domain losses, two benchmarks scored without
-- retraining, experiments/freeze_deep/freeze_deep.sql over them, and the figures.
local T = require "lt.test"
local root = debug.getinfo(1, "S").source:match("^@(.*)/experiments/freeze_deep/test%.lua$")
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_freeze_deep"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp .. "/m", layers = 4, hidden = 32, heads = 4, kv_heads = 2, vocab = 300, seed = 4,
              corpus = "/usr/share/games/fortunes/chinese" }
local corpus = tmp .. "/zh.txt"
local f = assert(io.open(corpus, "w"))
for i = 1, 200 do f:write(("第%d条：学而时习之，不亦说乎？有朋自远方来，不亦乐乎？\n%%\n"):format(i)) end
f:close()
local old = tmp .. "/en.txt"
f = assert(io.open(old, "w"))
for i = 1, 100 do f:write(("Fortune %d: the early bird gets the worm, the second mouse gets the cheese.\n%%\n"):format(i)) end
f:close()

-- the study as a module, called with a table (study.study: the args checked as on the command line)
local printed = require("experiments.freeze_deep.freeze_deep").run{ model = tmp .. "/m", corpus = corpus, old = old, steps = 4, eval_every = 2,
  seq_len = 32, micro_batch = 4, bench_limit = 8, val_windows = 8,
  bench = "antonyms,mc:" .. root .. "/tests/data/eval/mcq/sample.jsonl",
  freeze_embeddings = true, freeze_head = true, out = tmp .. "/out" }
lt.run.flush()
local study = lt.run.id()

local function child(name)
  return lt.run.query("SELECT id, status FROM runs WHERE parent_id = ? AND name = ?", study, name)[1]
end
local function metric(run, name)
  local r = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name = ? ORDER BY step DESC LIMIT 1", run, name)[1]
  return r and r.value
end

T.case("one ok child run per plan and the base", function()
  for _, name in ipairs{ "base", "full", "train_shallow", "train_deep" } do
    local c = child(name)
    T.ok(c, "child " .. name)
    T.eq(c.status, "ok", name)
  end
end)

T.case("trainable parameters follow the plans and the embeddings / head flags", function()
  local m = lt.model.load(tmp .. "/m")
  local total = m:n_params()
  local function trainable(name)
    return tonumber(lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'trainable_params'", child(name).id)[1].value)
  end
  local per_block, outside = 0, 0
  for _, t in pairs(m:parameters(0)) do per_block = per_block + t:numel() end
  -- embeddings [vocab, hidden], final norm [hidden], untied head [vocab, hidden]: 300*32*2 + 32
  for name, t in pairs(m:parameters()) do
    if not name:find("^model%.layers%.") then outside = outside + t:numel() end
  end
  T.eq(outside, 300 * 32 * 2 + 32)
  T.eq(trainable("full"), total - outside)
  -- each half-plan also freezes two of the four blocks
  T.eq(trainable("train_shallow"), total - outside - 2 * per_block)
  T.eq(trainable("train_deep"), total - outside - 2 * per_block)
  local p = lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'freeze_head'", child("full").id)[1]
  T.ok(p and (p.value == "true" or p.value == 1 or p.value == "1"), "freeze_head recorded: " .. tostring(p and p.value))
end)

T.case("frozen blocks do not move; trained ones do", function()
  local rows = lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'weight_change' ORDER BY layer",
                            child("train_shallow").id)
  T.eq(#rows, 4)
  T.ok(rows[1].value > 0 and rows[2].value > 0, "shallow blocks trained")
  T.eq(rows[3].value, 0); T.eq(rows[4].value, 0)
  local deep = lt.run.query("SELECT layer, value FROM layer_metrics WHERE run_id = ? AND name = 'weight_change' ORDER BY layer",
                            child("train_deep").id)
  T.eq(deep[1].value, 0); T.eq(deep[2].value, 0)
  T.ok(deep[3].value > 0 and deep[4].value > 0, "deep blocks trained")
end)

T.case("losses on both domains, two benchmarks without retraining, the named query", function()
  for _, name in ipairs{ "base", "full" } do
    T.ok(metric(child(name).id, "new_loss") and metric(child(name).id, "old_loss"), "losses of " .. name)
  end
  local n = lt.run.query("SELECT count(*) AS n FROM eval_items WHERE run_id = ? AND bench = 'antonyms'", child("full").id)[1].n
  T.eq(n, 8 * 4)  -- bench_limit items: cloze, logit, generate, generate_contains
  n = lt.run.query("SELECT count(*) AS n FROM eval_items WHERE run_id = ? AND bench = 'mc'", child("full").id)[1].n
  T.eq(n, 3 * 4)  -- the three items of the sample
  local t = lt.run.query(assert(io.open(root .. "/experiments/freeze_deep/freeze_deep.sql")):read("*a"))
  T.eq(#t, 8)  -- 4 plans x 2 benchmarks
  T.eq(t[1].study_run, study); T.eq(t[1].study, nil)  -- the first column: the study's run id, named so
  local row = {}
  for _, r in ipairs(t) do row[r.bench .. "/" .. r.plan] = r end
  local base, full = row["antonyms/base"], row["antonyms/full"]
  T.ok(base and full, "antonyms rows")
  T.eq(base.gain, 0); T.eq(base.old_delta, 0)
  local b_new, f_new = metric(child("base").id, "new_loss"), metric(child("full").id, "new_loss")
  -- the named query rounds losses to 4 decimals and accuracies to 3: off by <= 5e-5 and 5e-4
  -- (plus double roundings), within 1e-4 and 1e-3
  T.near(full.gain, b_new - f_new, 1e-4)
  T.near(full.old_delta, metric(child("full").id, "old_loss") - metric(child("base").id, "old_loss"), 1e-4)
  T.near(full.acc_logit, metric(child("full").id, "antonyms/logit/acc"), 1e-3)
  -- the headline protocol is the first of --protocols (cloze by default); retention on it
  T.eq(full.protocol, "cloze")
  T.near(full.acc, metric(child("full").id, "antonyms/cloze/acc"), 1e-3)
  T.near(full.acc_cloze, full.acc, 1e-12)
  local b_acc = metric(child("base").id, "antonyms/cloze/acc")
  if b_acc > 0 then T.near(full.retention, metric(child("full").id, "antonyms/cloze/acc") / b_acc, 1e-3) end
  T.ok(full.acc_contains ~= nil and full.acc_generate ~= nil, "both generate rules in the table")
  -- one tok/s: the query's is the study's printed one (the run's rate), rounded to a token
  T.near(full.tokens_per_s, printed.full.tokens_per_s, 0.5 + 1e-9, "tokens/s of the query = the printed table's")
  T.eq(full.trainable, tonumber(lt.run.query("SELECT value FROM params WHERE run_id = ? AND key = 'trainable_params'", child("full").id)[1].value))
end)

T.case("figures: loss curves and scores by plan, titles inside the picture", function()
  local arts = lt.run.query("SELECT path FROM artifacts WHERE run_id = ? AND kind = 'figure' ORDER BY path", study)
  T.eq(#arts, 1 + 2 * 4)  -- loss curves; 2 benchmarks x (cloze, logit, generate, generate_contains)
  for _, a in ipairs(arts) do
    local svg = T.read(a.path)
    local width = tonumber(svg:match('<svg[^>]- width="(%d+)"'))
    local title = svg:match('font%-size="14" font%-weight="bold">([^<]*)<')
    T.ok(width and title and #title > 0, a.path)
    -- 14 px bold sans-serif is at most ~0.65 em a character (8 px left margin)
    T.ok(8 + #title * 14 * 0.65 <= width, ("title of %s fits: %d chars in %d px"):format(a.path, #title, width))
  end
  local curves = T.read(tmp .. "/out/loss_curves.svg")
  for _, name in ipairs{ "full", "train_shallow", "train_deep" } do T.ok(curves:find(">" .. name .. "<", 1, true), name) end
  -- one colour per plan across the figures (lt.report): a plan's line and its bars share it
  local bars = T.read(tmp .. "/out/scores_antonyms_cloze.svg")
  for _, name in ipairs{ "full", "train_shallow", "train_deep" } do
    local colour = curves:match('<polyline[^>]-stroke="(#%x+)"[^>]*><title>' .. name .. '<')
    T.ok(colour, "the curve of " .. name)
    T.ok(bars:find('fill="' .. colour .. '"><title>' .. name .. ',', 1, true), name .. "'s bars in its curve's colour " .. colour)
  end
  T.ok(bars:find(">chance<", 1, true), "the chance line of a 4-way benchmark")
  -- the table as CSV, one row per plan and the base
  local csv = T.read(tmp .. "/out/results.csv")
  local _, lines = csv:gsub("\n", "")
  T.eq(lines, 5)
  T.ok(csv:find('^plan,trainable_params,'), "CSV header")
end)

T.case("chart helpers: axis ticks by hand, one bar per plan and category, long titles widen the picture", function()
  local svg = require "lt.report.svg"
  local t = svg.ticks(0, 1, 5)
  -- ticks are k x step in double: a rounding or two of 2^-53; 1e-12 is far above
  T.eq(#t, 6); T.near(t[1], 0, 1e-12); T.near(t[2], 0.2, 1e-12); T.near(t[6], 1, 1e-12)
  t = svg.ticks(2.3, 7.9, 5)  -- raw step 1.12 -> 2: 4, 6
  T.eq(#t, 2); T.near(t[1], 4, 1e-12); T.near(t[2], 6, 1e-12)
  local title = ("a long title that would not fit into the default width "):rep(3)
  local path = svg.bars(tmp .. "/bars.svg", { title = title, categories = { "average", "STEM", "Other" },
    series = { { name = "base", values = { 0.5, 0.25, 0.75 } }, { name = "full", values = { 0.4, 0.2, 0.6 } } },
    ymin = 0, ymax = 1 })
  local text = T.read(path)
  local _, bars = text:gsub("<rect x=[^>]-><title>", "")
  T.eq(bars, 2 * 3)
  T.ok(text:find("<title>full, Other: 0.6</title>", 1, true), "a bar's tooltip")
  local width = tonumber(text:match('<svg[^>]- width="(%d+)"'))
  T.ok(width >= 8 + #title * 14 * 0.65, "width " .. width .. " holds the title")
  T.raises(function() svg.bars(tmp .. "/x.svg", { categories = { "a" }, series = { { name = "s", values = {} } } }) end,
           "no value for 'a'")
  path = svg.lines(tmp .. "/lines.svg", { title = "t", series = { { name = "s", values = { 3, 1, 2 } } }, smooth = 2 })
  -- running mean over 2 points: 3, 2, 1.5
  T.ok(T.read(path):find("<polyline", 1, true), "a line")
end)

T.case("--preset=paper: the table carries the paper's Average, the macro mean over categories; printed within 100 columns", function()
  -- the preset's values, each overridden by a small one (explicit values win over a preset),
  -- on two C-Eval subjects of two categories (computer_network: STEM, high_school_chinese:
  -- Humanities)
  local out = tmp .. "/paper"
  local lines, print0 = {}, print  -- what the study prints
  print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    for l in (table.concat(parts, "\t") .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  end
  local ok, err = pcall(require("experiments.freeze_deep.freeze_deep").run, { preset = "paper", model = tmp .. "/m",
    corpus = corpus, old = old, steps = 2,
    lr = 1e-3, seq_len = 32, dtype = "", micro_batch = 4, grad_accum = 1, max_bytes = 20000, bench_limit = 0,
    eval_every = 0, val_windows = 4, task_probe = 0, plans = "full", bench = "ceval:" .. root .. "/tests/data/eval/ceval",
    out = out })
  print = print0
  assert(ok, err)
  lt.run.flush()
  local csv = T.read(out .. "/results.csv")
  local header = csv:match("^[^\n]+")
  -- the printed table, its widest (the paper's Average column added), fits 100 columns; the CSV
  -- has every column (wall time, tokens/s, each protocol)
  local table_at
  for i, l in ipairs(lines) do if l:match("^plan ") then table_at = i end end
  T.ok(table_at, "the printed table")
  for i = table_at, table_at + 2 do T.ok(#lines[i] <= 100, ("%d characters: %s"):format(#lines[i], lines[i])) end
  T.ok(lines[table_at]:find("avg logit", 1, true) and not lines[table_at]:find("tok/s", 1, true), lines[table_at])
  for _, c in ipairs{ "wall_s", "tokens_per_s", "acc_logit", "acc_generate", "acc_generate_contains", "avg_logit" } do
    T.ok(("," .. header .. ","):find("," .. c .. ",", 1, true), c .. " in results.csv")
  end
  T.ok(header:find("avg_logit", 1, true) and header:find("avg_generate_contains", 1, true), header)
  T.ok(not header:find("avg_generate,", 1, true), "the first-letter rule has no Average column")
  -- this call's own full run: the latest child named full (the study ran in this test's run)
  local full = lt.run.query("SELECT max(id) AS id FROM runs WHERE parent_id = ? AND name = 'full'", study)[1].id
  local cols = {}
  for c in header:gmatch("[^,]+") do cols[#cols + 1] = c end
  local row
  for line in csv:gmatch("[^\n]+") do if line:match('^"full",') then row = line end end
  local vals, i = {}, 0
  for v in (row .. ","):gmatch("([^,]*),") do i = i + 1; vals[cols[i]] = tonumber(v) end
  for _, p in ipairs{ "logit", "generate_contains" } do
    local cats = lt.run.query("SELECT value FROM metrics WHERE run_id = ? AND name LIKE ?", full, "ceval/" .. p .. "/acc/%")
    T.eq(#cats, 2, p .. ": two categories")
    -- the CSV holds the value as %.17g or the like; 1e-9 covers any printing
    T.near(vals["avg_" .. p], (cats[1].value + cats[2].value) / 2, 1e-9, p .. ": Average = mean of the categories")
  end
end)

T.case("--shallow_blocks=K: the first K blocks are the shallow ones, a count kept an integer", function()
  local cpt = require "experiments.freeze_deep.cpt"
  local base = lt.model.load(tmp .. "/m")  -- 4 blocks
  local cfg = { plans = "full,train_shallow,train_deep", split = 0.5, shallow_blocks = 3 }
  local p = cpt.plans(base, cfg)
  T.same_table(p.train_shallow[1].layers, { 3 })      -- trains 0-2
  T.same_table(p.train_deep[1].layers, { 0, 1, 2 })   -- trains 3
  T.same_table(p.full[1], {})
  cfg.shallow_blocks = 0                               -- --split's share: shallow:0.5
  T.same_table(cpt.plans(base, cfg).train_shallow[1].layers, { 2, 3 })
  cfg.shallow_blocks = 4                               -- every block shallow: train_deep trains none
  T.same_table(cpt.plans(base, cfg).train_deep[1].layers, { 0, 1, 2, 3 })
  cfg.shallow_blocks = 5
  T.raises(function() cpt.plans(base, cfg) end, "%-%-shallow_blocks=5: the model has 4 blocks")
  base:free()
end)

T.finish()

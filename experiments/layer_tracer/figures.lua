-- experiments/layer_tracer/figures.lua: the pictures and the per-sample file of a LayerTracer
-- study, from the result of lt.diag.trace: a heatmap like the paper's Figure 4 (rows = task groups,
-- columns = layers; Ratio in greens, ΔJS in reds), the same across runs or models from the store
-- (Figure 4/9, M.grid), the normalised TP and LS profiles with the shallow and deep zones (Figure
-- 10), and every sample's series as JSON. Each returns the path it wrote. Also the checks of what
-- was traced (M.target_report) and the recommendation's text.
local svg = require "lt.report.svg"
local M = {}

-- "1/3,1/2,0.66" → {1/3, 1/2, 0.66}: split ratios as fractions or decimals
function M.parse_ratios(spec)
  local out = {}
  for item in tostring(spec):gmatch("[^,]+") do
    local a, b = item:match("^%s*([%d.]+)%s*/%s*([%d.]+)%s*$")
    local v = a and tonumber(a) / tonumber(b) or tonumber(item)
    if not v or v ~= v or v <= 0 or v >= 1 then
      error(("layer_tracer: split ratio '%s': expected a number or a fraction strictly between 0 and 1 (e.g. 1/3)")
        :format(item), 0)
    end
    out[#out + 1] = v
  end
  if #out == 0 then error("layer_tracer: no split ratios in '" .. tostring(spec) .. "'", 0) end
  return out
end

-- What was traced: the share of targets that are the item's answer (the first token of its
-- target text), that are whitespace or punctuation only, and the final P_t, with warnings
-- when the study says little about the task. samples: those given to lt.diag.trace (with
-- target_text from lt.tasks); tok decodes the targets.
M.min_final_p = 0.05   -- mean P_t after the last block below this: "tiny"
function M.target_report(r, samples, tok)
  local n, answer, with_answer, blank, p_sum = #r.samples, 0, 0, 0, 0
  local blanks = {}
  for i, s in ipairs(r.samples) do
    local text = samples[i] and samples[i].target_text
    if text and text ~= "" then
      with_answer = with_answer + 1
      if tok:encode(text, { special = false })[1] == s.target then answer = answer + 1 end
    end
    local piece = tok:decode({ s.target })
    if not piece:find("[^%s%p]") then
      blank = blank + 1
      blanks[piece] = (blanks[piece] or 0) + 1
    end
    p_sum = p_sum + s.p_target[r.n_layers]
  end
  local rep = { samples = n, answer = answer, with_answer = with_answer, blank = blank,
                answer_share = with_answer > 0 and answer / with_answer or nil,
                blank_share = blank / n, final_p = p_sum / n, warnings = {} }
  if blank > n / 2 then
    local common, count = "", 0
    for piece, c in pairs(blanks) do if c > count then common, count = piece, c end end
    rep.warnings[#rep.warnings + 1] = ("%d of %d traced targets are whitespace or punctuation (most often %q):"
      .. " the study traces formatting, not the task; try --target=given or a model that does the task")
      :format(blank, n, common)
  end
  if rep.final_p < M.min_final_p then
    rep.warnings[#rep.warnings + 1] = ("the mean final P_t of the targets is %.4g (< %g): the model barely predicts"
      .. " them, so TP and S(b) measure noise"):format(rep.final_p, M.min_final_p)
  end
  return rep
end

-- The recommendation as lines to print: S(b) per split, b, and the layer ranges.
function M.recommendation_lines(r)
  local lines = {}
  for _, s in ipairs(r.splits or {}) do
    lines[#lines + 1] = ("S(b=%d) = %7.3f   (ratio %.3f)"):format(s.b, s.score, s.ratio)
  end
  local rec = r.recommendation
  if not rec then
    lines[#lines + 1] = ("no split: %d block(s) leave no shallow and deep side with a defined ΔJS"):format(r.n_layers)
    return lines
  end
  local function range(t) return t[1] == t[2] and ("block %d"):format(t[1]) or ("blocks %d..%d"):format(t[1], t[2]) end
  if rec.allocation == "train_shallow" then
    lines[#lines + 1] = ("recommended (S(b=%d) = %.3f > 0): train shallow %s, freeze deep %s")
      :format(rec.b, rec.score, range(rec.train), range(rec.freeze))
  elseif rec.allocation == "train_deep" then
    lines[#lines + 1] = ("every S(b) < 0: the reverse allocation is favoured (most negative S(b=%d) = %.3f):"
      .. " train deep %s, freeze shallow %s"):format(rec.b, rec.score, range(rec.train), range(rec.freeze))
  else
    lines[#lines + 1] = ("no S(b) > 0 (highest S(b=%d) = %.3f): neither allocation is favoured; shallow %s, deep %s")
      :format(rec.b, rec.score, range(rec.train), range(rec.freeze))
  end
  return lines
end

local function layer_labels(n)
  local t = {}
  for l = 1, n do t[l] = tostring(l - 1) end
  return t
end

local na_final = "the final block's ΔJS is undefined"

-- Figure 4 for one run: rows = task groups, columns = blocks; Ratio in greens, ΔJS in reds.
-- The final block's ΔJS is "n/a" unless the trace included it (final_djs).
function M.heatmap(r, path, title)
  local rows, ratio, djs = {}, {}, {}
  for i, g in ipairs(r.groups) do rows[i], ratio[i], djs[i] = tostring(g.group), g.tp_ratio, g.ls_djs end
  return svg.heatmap(path, { title = title or "LayerTracer", rows = rows, cols = layer_labels(r.n_layers),
    row_title = "group", col_title = "layer (block)",
    panels = { { title = "Task Particle: Ratio", ramp = "greens", values = ratio },
               { title = "Layer-wise Sensitivity: ΔJS", ramp = "reds", values = djs, na = na_final } } })
end

-- Figure 10: the normalised TP and LS profiles with the shallow and deep zones shaded at the
-- recommended split (trained side in blue, frozen side in grey).
function M.profile(r, path, title)
  local rec, zones, mark = r.recommendation, nil, nil
  if rec then
    local b = rec.b
    local shallow_trained = rec.allocation ~= "train_deep"
    local what = rec.allocation == "neither" and { "", "" }
      or shallow_trained and { ": train", ": freeze" } or { ": freeze", ": train" }
    zones = {
      { from = -0.5, to = b - 0.5, label = ("shallow 0..%d%s"):format(b - 1, what[1]),
        fill = shallow_trained and "#c6dbef" or "#d9d9d9" },
      { from = b - 0.5, to = r.n_layers - 0.5, label = ("deep %d..%d%s"):format(b, r.n_layers - 1, what[2]),
        fill = shallow_trained and "#d9d9d9" or "#c6dbef" },
    }
    mark = { at = b - 0.5, label = ("b = %d, S(b) = %.3f"):format(b, rec.score) }
  end
  return svg.profile(path, { title = title or "Normalised TP and LS (min-max over layers)",
    x = layer_labels(r.n_layers), x_title = "layer (block)", ymin = 0, ymax = 1,
    series = { { name = "TP", values = r.tp }, { name = "LS", values = r.ls } },
    zones = zones, mark = mark,
    notes = (#r.ls < r.n_layers) and { "LS: final block n/a" } or nil })
end

-- "all" → {} (every LayerTracer run), "3,7,9" → {3, 7, 9}; anything else an error naming it
function M.parse_runs(spec)
  local ids = {}
  if spec == "all" then return ids end
  for id in tostring(spec):gmatch("[^,]+") do
    ids[#ids + 1] = tonumber(id) or error(("layer_tracer: --grid: '%s' is not a run id"):format(id), 0)
  end
  return ids
end

-- Figure 4/9 across runs or models from the run store: one row per run, columns = blocks (up to the
-- deepest model; a shallower model's missing blocks are n/a), Ratio in greens and ΔJS in reds, each
-- the mean over task groups as logged by experiments/layer_tracer/layer_tracer.lua. Colours span
-- each row's own min..max (models differ in scale); the cells' titles give the values. opts: runs =
-- {ids} (default: every run that logged ls_djs), labels = {[id] = text} (default: the run's
-- model_path or model param, else "run N"), title.
function M.grid(path, opts)
  lt.check_options(opts, "layer_tracer.grid", { "runs", "labels", "title" })
  opts = opts or {}
  local ids = opts.runs
  if not ids or #ids == 0 then
    ids = {}
    for _, row in ipairs(lt.run.query("SELECT DISTINCT run_id FROM layer_metrics WHERE name = 'ls_djs' ORDER BY run_id")) do
      ids[#ids + 1] = row.run_id
    end
  end
  if #ids == 0 then error("layer_tracer.grid: no LayerTracer runs in the store (none logged ls_djs)", 0) end
  local rows, ratio, djs, n = {}, {}, {}, 0
  for i, id in ipairs(ids) do
    local vals = { tp_ratio = {}, ls_djs = {} }
    local found = false
    for _, row in ipairs(lt.run.query("SELECT name, layer, avg(value) AS v FROM layer_metrics WHERE run_id = ? " ..
                                      "AND name IN ('tp_ratio', 'ls_djs') GROUP BY name, layer", id)) do
      vals[row.name][row.layer + 1] = row.v
      found = true
      if row.name == "tp_ratio" then n = math.max(n, row.layer + 1) end
    end
    if not found then error(("layer_tracer.grid: run %s logged no tp_ratio / ls_djs"):format(tostring(id)), 0) end
    local label = opts.labels and opts.labels[id]
    if not label then
      local p = lt.run.query("SELECT key, value FROM params WHERE run_id = ? AND key IN ('model_path', 'model') " ..
                             "AND value <> '' ORDER BY key DESC LIMIT 1", id)[1]
      label = p and ("%s (run %d)"):format(p.value:gsub("/+$", ""):match("[^/]+$") or p.value, id) or ("run " .. id)
    end
    rows[i], ratio[i], djs[i] = label, vals.tp_ratio, vals.ls_djs
  end
  -- rows shorter than n: missing entries are nil → n/a
  for i = 1, #rows do
    for l = 1, n do
      if ratio[i][l] == nil then ratio[i][l] = false end
      if djs[i][l] == nil then djs[i][l] = false end
    end
  end
  return svg.heatmap(path, { title = opts.title or "LayerTracer across models (each row scaled to its own range)",
    rows = rows, cols = layer_labels(n), row_title = "model", col_title = "layer (block)",
    panels = { { title = "Task Particle: Ratio", ramp = "greens", values = ratio, scale = "row" },
               { title = "Layer-wise Sensitivity: ΔJS", ramp = "reds", values = djs, scale = "row",
                 na = na_final .. "; or no such block" } } })
end

-- JSON array per sample: residual series as arrays whose JSON index is the residual (0 =
-- embeddings, l+1 = after block l); block series indexed by block; the prompt, its context
-- positions and the top lens tokens (decoded when a tokenizer is given).
function M.write_samples(r, samples, path, tok)
  local function residual(t)
    local a = {}
    for k = 0, r.n_layers do a[k + 1] = t[k] end
    return a
  end
  local out = {}
  for i, s in ipairs(r.samples) do
    local top = {}
    for k = 0, r.n_layers do
      top[k + 1] = { ids = s.top[k].ids, probs = s.top[k].probs }
      if tok then
        top[k + 1].tokens = {}
        for j, id in ipairs(s.top[k].ids) do top[k + 1].tokens[j] = tok:decode({ id }) end
      end
    end
    out[i] = { prompt = samples[i].prompt, context = samples[i].context, group = s.group,
               target = s.target, target_token = tok and tok:decode({ s.target }) or nil,
               p_target = residual(s.p_target), js = residual(s.js), tp_ratio = s.tp_ratio,
               ls_djs = s.ls_djs, tp_interval = s.tp_interval, top = top }
  end
  local f, err = io.open(path, "w")
  if not f then error(("layer_tracer: cannot write %s: %s"):format(path, err), 0) end
  f:write(lt.json.encode(out), "\n")
  f:close()
  return path
end

-- Logs a trace (lt.diag.trace's result) to the current run: layer_metrics p_target, tp_ratio,
-- js, ls_djs per task group (layer l = block l) and the profiles tp_profile, ls_profile; the
-- split scores S(b) (metric split_score at step b), the recommended split and allocation
-- (1 train_shallow, -1 train_deep, 0 neither), and the target shares of target_report.
function M.log(r, targets)
  for _, g in ipairs(r.groups) do
    for _, name in ipairs{ "p_target", "tp_ratio", "js", "ls_djs" } do
      lt.run.log_layers(name, g[name], { grp = g.group })
    end
  end
  lt.run.log_layers("tp_profile", r.tp)
  lt.run.log_layers("ls_profile", r.ls)
  for _, s in ipairs(r.splits or {}) do lt.run.log("split_score", s.score, { step = s.b }) end
  if r.recommendation then
    lt.run.log("split_b", r.recommendation.b)
    lt.run.log("allocation", ({ train_shallow = 1, train_deep = -1, neither = 0 })[r.recommendation.allocation])
  end
  if targets.answer_share then lt.run.log("target_answer_share", targets.answer_share) end
  lt.run.log("target_blank_share", targets.blank_share)
  lt.run.log("final_p_target", targets.final_p)
end

-- What a trace found, printed: the samples, the targets (--target=`target`), the final block's
-- ΔJS and the recommendation; warnings on stderr
function M.print(r, samples, targets, target, out)
  print(("%d samples, %d groups, %d layers; artifacts in %s"):format(#samples, #r.groups, r.n_layers, out))
  print(("targets (--target=%s): %s are the antonym's first token, %d of %d whitespace or punctuation;"
    .. " mean final P_t %.4f"):format(target,
    targets.answer_share and ("%d of %d (%.0f%%)"):format(targets.answer, targets.with_answer,
                                                          100 * targets.answer_share) or "none given",
    targets.blank, targets.samples, targets.final_p))
  for _, w in ipairs(targets.warnings) do io.stderr:write("layer_tracer: warning: ", w, "\n") end
  print(("final block's ΔJS: %s"):format(r.final_djs and "included (--final_djs)" or "undefined, left out of LS and S(b)"))
  for _, line in ipairs(M.recommendation_lines(r)) do print(line) end
end

return M

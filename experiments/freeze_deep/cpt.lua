-- experiments/freeze_deep/cpt.lua: continued pre-training of a base model under freeze plans, what
-- experiments/freeze_deep/freeze_deep.lua (and hybrid.lua through it) is made of: the new domain
-- and the base's own domain as held-out windows, the measures of a model (losses, the antonym task,
-- benchmarks under several protocols), the plans, the comparison table and the figures.
local study = require "lt.study"
local report = require "lt.report"
local tasks = require "lt.tasks"
local M = {}

M.plans_order = { "base", "full", "train_shallow", "train_deep" }
M.protocols = { "cloze", "logit", "generate" }

-- a text / JSONL file packed with `tokenizer` into a fresh OUT/NAME; → folder, lt.data info
local function pack(tokenizer, out, name, inputs, val, max_bytes)
  local dir = out .. "/" .. name
  lt.fs.remove(dir)  -- lt.fs: no shell; refuses a folder that ltrun did not make
  lt.fs.mkdir(dir)
  return dir, lt.data.pack{ tokenizer = tokenizer, inputs = inputs, out = dir, val = val, max_bytes = max_bytes,
                            progress = false }
end

-- The data of a study: cfg.corpus (a text / JSONL file, packed here, or a folder `ltrun data
-- pack` made) as the new domain with its validation windows, and cfg.old (default
-- MODEL/heldout.txt) as windows of the base's own domain (none, with a warning, when the
-- default file is missing); `model`: the base's folder. → {packed =, new =, old =}
function M.domains(cfg, model)
  lt.fs.mkdir(cfg.out)
  local d = {}
  local index = io.open(cfg.corpus .. "/index.json")
  local info
  if index then
    index:close()
    d.packed, info = cfg.corpus, lt.data.info(cfg.corpus)
  else
    d.packed, info = pack(model, cfg.out, "new_corpus", { cfg.corpus }, 0.05, cfg.max_bytes)
  end
  lt.run.param{ train_tokens = info.train_tokens, val_tokens = info.val_tokens }
  local seq = math.min(cfg.seq_len, 512)
  d.new = lt.data.windows(d.packed, { split = "val", seq_len = seq, n = cfg.val_windows })
  local old_path = cfg.old ~= "" and cfg.old or model .. "/heldout.txt"
  local f = io.open(old_path)
  if f then
    f:close()
    local dir = pack(model, cfg.out, "old_domain", { old_path }, 0, 0)
    d.old = lt.data.windows(dir, { split = "train", seq_len = seq, n = cfg.val_windows })
    lt.run.param("old_domain", old_path)
  elseif cfg.old ~= "" then
    error(("freeze_deep: --old=%s: no such file"):format(cfg.old), 0)
  else
    io.stderr:write(("freeze_deep: %s is missing: no old-domain loss (give --old=FILE)\n"):format(old_path))
  end
  return d
end

-- the summaries each protocol gives (generate: two scoring rules)
local function shown(protocols)
  local out = {}
  for _, p in ipairs(protocols) do
    out[#out + 1] = p
    if p == "generate" then out[#out + 1] = "generate_contains" end
  end
  return out
end

-- measure(m, r): the losses on both domains, the antonym task (cfg.task_probe prompts) and
-- each benchmark of cfg.bench under cfg.protocols, logged to the current run and put in r
function M.measurer(cfg, d)
  local benches, protocols = study.list(cfg.bench), study.list(cfg.protocols)
  local task_items = cfg.task_probe > 0 and tasks.load("wordnet", { split = "train", n = cfg.task_probe, seed = 3 }) or nil
  return function(m, r)
    if task_items then
      r.task_acc = tasks.task_accuracy(m, task_items).acc
      lt.run.log("task_acc", r.task_acc)
    end
    r.new_loss = lt.train.eval_loss(m, d.new)
    lt.run.log("new_loss", r.new_loss)
    if d.old then
      r.old_loss = lt.train.eval_loss(m, d.old)
      lt.run.log("old_loss", r.old_loss)
    end
    r.scores = {}
    for _, spec in ipairs(benches) do
      r.scores[spec] = lt.eval.run(m, spec, { limit = cfg.bench_limit > 0 and cfg.bench_limit or nil,
                                               shots = cfg.shots, protocols = protocols })
    end
    r.acc = {}  -- the first benchmark's accuracy by protocol
    for _, p in ipairs(shown(protocols)) do r.acc[p] = r.scores[benches[1]][p].acc end
    r.headline, r.acc_headline = protocols[1], r.acc[protocols[1]]
    return r
  end
end

-- the blocks each plan trains, in lt.layers.parse's grammar: --split is the shallow share F
-- (--shallow_blocks=K instead: the first K blocks are the shallow ones)
M.plan_blocks = { full = "all", train_shallow = "shallow:%s", train_deep = "deep:%s" }

-- the freeze spec of each plan of cfg.plans: the blocks it does not train, and the embeddings /
-- final norm + LM head when cfg.freeze_embeddings / cfg.freeze_head
function M.plans(base, cfg)
  local function spec(blocks)
    local s = { blocks }
    if cfg.freeze_embeddings then s[#s + 1] = "embeddings" end
    if cfg.freeze_head then s[#s + 1] = "final_norm"; s[#s + 1] = "lm_head" end
    return s
  end
  local out = {}
  local k = cfg.shallow_blocks or 0  -- a count of shallow blocks, kept an integer (hybrid's)
  if k > base.n_layers then
    error(("freeze_deep: --shallow_blocks=%d: the model has %d blocks"):format(k, base.n_layers), 0)
  end
  for _, name in ipairs(study.list(cfg.plans)) do
    local trained = {}
    if k > 0 and name ~= "full" then
      for l = 0, base.n_layers - 1 do trained[l] = (l < k) == (name == "train_shallow") end
    else
      local text = M.plan_blocks[name]:format(("%.17g"):format(cfg.split))
      for _, l in ipairs(lt.layers.parse(base, text, "--split")) do trained[l] = true end
    end
    local frozen = {}
    for l = 0, base.n_layers - 1 do if not trained[l] then frozen[#frozen + 1] = l end end
    out[name] = spec(#frozen > 0 and { layers = frozen } or {})
  end
  return out
end

-- One plan's training, in its child run: a clone of `base` with `spec` frozen, trained on the
-- packed new domain (checkpoint options `ck`), measured as the base is; → the training's result
function M.train_plan(cfg, base, name, spec, packed, ck, measure)
  lt.run.param{ plan = name, freeze = lt.layers.describe(spec),
                freeze_embeddings = cfg.freeze_embeddings, freeze_head = cfg.freeze_head }
  local m = base:clone():freeze(spec)
  local o = study.merge_args({ data = packed }, ck)
  local r = lt.train.causal_lm(m, study.train_options(cfg, o))
  lt.run.log("wall_s_total", r.wall_s)
  lt.train.weight_change(m, base, { log = "weight_change" })
  measure(m, r)
  m:free()
  return r
end

-- The comparison: one row per plan (and the base) with the gain on the new domain, the cost on
-- the old one, the task and each protocol's accuracy on the first benchmark (the first
-- protocol's retention = plan's / base's), under --preset=paper also the paper's Average (the
-- macro mean over categories) per protocol; the other benchmarks under the headline protocol;
-- a warning when the base gives one letter to nearly every logit item. `model`: the base's folder.
function M.print(results, cfg, model)
  local b, benches, protocols = results.base, study.list(cfg.bench), shown(study.list(cfg.protocols))
  print(("base model %s: new-domain loss %.4f, old-domain loss %s; %s"):format(model, b.new_loss,
        b.old_loss and ("%.4f"):format(b.old_loss) or "n/a", cfg.bench))
  print("gain = base new-domain loss - plan's (higher: learnt more); old +/- = plan's old-domain loss - base's"
        .. " (higher: forgot more);")
  print(("acc PROTOCOL = %s accuracy under that protocol; retention = plan's / base's (%s protocol)"):format(
        benches[1], protocols[1]))
  local short = { cloze = "cloze", logit = "logit", generate = "gen", generate_contains = "contains" }
  local cols = { { "plan", "%-14s" }, { "trainable_params", "%10d", head = "trainable" }, { "wall_s", "%7.1f", head = "wall s" },
                 { "tokens_per_s", "%8.0f", head = "tok/s" }, { "new_loss", "%9.4f", head = "new loss" },
                 { "gain", "%7.3f" }, { "old_loss", "%9.4f", head = "old loss" }, { "old_delta", "%+7.3f", head = "old +/-" },
                 { "task_acc", "%8.3f", head = "task acc" } }
  for k, p in ipairs(protocols) do
    cols[#cols + 1] = { "acc_" .. p, "%9.3f", head = "acc " .. short[p] }
    if k == 1 then cols[#cols + 1] = { "retention", "%9.2f" } end
  end
  -- the paper's "Average" (Tables 1-2): the macro mean over the benchmark's categories, of the
  -- logit protocol and of the answer-included generate rule (generate_contains)
  local paper = cfg.preset == "paper"
  if paper then
    print("avg PROTOCOL = the paper's Average: the mean of the per-category accuracies (generate: answer-included rule)")
    for _, p in ipairs(protocols) do
      if p ~= "generate" then cols[#cols + 1] = { "avg_" .. p, "%9.3f", head = "avg " .. short[p] } end
    end
  end
  local rows = {}
  for name, r in study.sorted(results) do
    local row = { plan = name, trainable_params = r.trainable_params, wall_s = r.wall_s, tokens_per_s = r.tokens_per_s,
                  new_loss = r.new_loss, gain = b.new_loss - r.new_loss, old_loss = r.old_loss,
                  old_delta = r.old_loss and (r.old_loss - b.old_loss), task_acc = r.task_acc,
                  retention = b.acc[protocols[1]] > 0 and r.acc[protocols[1]] / b.acc[protocols[1]] or 0 }
    for _, p in ipairs(protocols) do
      row["acc_" .. p] = r.acc[p]
      if paper then row["avg_" .. p] = r.scores[benches[1]][p].acc_macro end
    end
    rows[#rows + 1] = row
  end
  -- printed: the key columns, within 100 characters; results.csv (and the web view, `ltrun sql
  -- @freeze_deep`) has them all
  local show = { "plan", "trainable_params", "new_loss", "gain", "old_loss", "old_delta", "task_acc",
                 "acc_" .. protocols[1], "retention" }
  if paper then show[#show + 1] = "avg_" .. (protocols[1] == "generate" and "generate_contains" or protocols[1]) end
  print(("(every column: %s/results.csv)"):format(cfg.out))
  report.table{ columns = cols, rows = rows, csv = cfg.out .. "/results.csv", show = show }
  for k = 2, #benches do
    local line = {}
    for name, r in study.sorted(results) do line[#line + 1] = ("%s %.3f"):format(name, r.scores[benches[k]][protocols[1]].acc) end
    print(("%s accuracy (%s): %s"):format(benches[k], protocols[1], table.concat(line, ", ")))
  end
  for _, spec in ipairs(benches) do
    if not b.scores[spec].logit then break end  -- the letter check is about the logit protocol
    local answers, most, n_items = {}, 0, 0
    for _, it in ipairs(b.scores[spec].items) do
      if it.protocol == "logit" then answers[it.prediction] = (answers[it.prediction] or 0) + 1 end
    end
    local spread = {}
    for letter, n in study.sorted(answers) do
      spread[#spread + 1] = letter .. "=" .. n
      most, n_items = math.max(most, n), n_items + n
    end
    print(("%s: the base's logit answers %s"):format(spec, table.concat(spread, " ")))
    if n_items > 0 and most >= 0.9 * n_items then
      print(("warning: the base gives one letter to %d of %d %s items: the letter protocols cannot show what the "
             .. "plans cost on that benchmark; task_acc, old_loss and the cloze protocol can"):format(most, n_items, spec))
    end
  end
end

-- the figures: training-loss curves by plan (the paper's Figure 8) and, per benchmark and
-- protocol, scores by plan and category (Figure 1, Tables 1-2), 4-way items: chance 0.25
function M.figures(results, curves, cfg)
  local colours = report.colours(M.plans_order)  -- one colour per plan in every figure
  lt.run.artifact(report.curves(cfg.out .. "/loss_curves.svg", { colours = colours,
    title = ("Training loss on the new domain by plan (%d steps)"):format(cfg.steps), y_title = "training loss",
    series = curves, order = M.plans_order, smooth = math.max(1, math.floor(cfg.steps / 30)) }), { kind = "figure" })
  for _, spec in ipairs(study.list(cfg.bench)) do
    for _, protocol in ipairs(shown(study.list(cfg.protocols))) do
      local scores = {}
      for name, r in pairs(results) do scores[name] = r.scores[spec][protocol] end
      local file = ("%s/scores_%s_%s.svg"):format(cfg.out, spec:gsub("[^%w]+", "_"), protocol)
      lt.run.artifact(report.scores(file, { title = ("%s accuracy by plan and category (%s protocol)"):format(spec, protocol),
                                            scores = scores, order = M.plans_order, colours = colours,
                                            chance = spec:match("^antonyms") and 0.25 or nil }), { kind = "figure" })
    end
  end
  print(("figures: %s/loss_curves.svg, %s/scores_*.svg; table: %s/results.csv"):format(cfg.out, cfg.out, cfg.out))
end

return M

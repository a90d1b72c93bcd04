-- experiments/freeze_deep.lua: Freeze Deep, Train Shallow: continued pre-training of one base
-- model on a corpus of another domain (Chinese fortunes) under three plans with the same data,
-- steps and hyper-parameters: `full`, `train_shallow` (deep blocks frozen), `train_deep`
-- (shallow blocks frozen). Whether the embeddings and the final norm + LM head train too is
-- said by --freeze_embeddings / --freeze_head (default: they train in every plan).
-- What each plan gains and costs:
--   new_loss  held-out loss on the new corpus (its validation documents): the gain;
--   old_loss  held-out loss on the base's own domain (--old, default MODEL/heldout.txt, the
--             English documents experiments/pretrain_tiny.lua kept out of training): the cost;
--   task_acc  the antonym task in the paper's format (lt.tasks, prompts of the pairs the
--             default base was taught, never seen in its training): the share whose top
--             prediction is the antonym's first token, on --task_probe prompts (0: skip);
--   accuracy  on each benchmark of --bench (comma-separated; by default the base's task:
--             antonyms, the pairs it was taught, and antonyms_heldout, pairs it only read
--             as statements; ceval:DIR,cmmlu:DIR on a GPU node) under each protocol of
--             --protocols (lt.eval: cloze, logit, generate); the first one is the table's
--             headline accuracy and its retention (plan's / base's). The default puts cloze
--             first: the tiny base does not bind answers to option letters (it gives one
--             letter to nearly every item, and the study warns when a base does), so the
--             letter protocols cannot show what a plan costs it; --preset=paper uses the
--             paper's logit and generate.
-- Each plan is a child run (trainable parameters, wall time, tokens/s, loss curve, losses,
-- per-layer weight change, benchmark items); the base is scored the same way in a child run
-- `base`. `ltrun sql @freeze_deep` gives the table again; two SVG figures are artifacts: the
-- training-loss curves of the plans (the paper's Figure 8) and benchmark scores by plan and
-- category (Figure 1, Tables 1-2). Makes the base model (experiments/pretrain_tiny.lua) when
-- it is missing. --preset=paper sets the paper's Table 6 hyper-parameters (see README).
-- --plans=train_shallow (comma-separated) runs only those plans; called from another study
-- (loadfile(...)(argv), e.g. experiments/hybrid.lua) it returns the results by plan.
local exp = require "lt.experiment"
local args = require "lt.args"
local svg = require "lt.svg"
-- run as a script, the varargs are the command line; called from another study, one table
-- of --key=value strings
local argv = type((...)) == "table" and (...) or nil

local defaults = { model = exp.default_model_path, corpus = "/usr/share/games/fortunes/chinese", old = "",
                   steps = 300, lr = 1e-3, split = 0.5, seq_len = 64, micro_batch = 8, grad_accum = 1,
                   warmup = 0.1, weight_decay = 0.01, beta1 = 0.9, beta2 = 0.95, clip = 1.0, dtype = "",
                   eval_every = 100, max_bytes = 1000000, val_windows = 64, bench = "antonyms,antonyms_heldout",
                   bench_limit = 100, shots = 0, protocols = "cloze,logit,generate", task_probe = 200, freeze_embeddings = false, freeze_head = false,
                   preset = "", plans = "full,train_shallow,train_deep", out = "artifacts/freeze_deep",
                   checkpoint_dir = "", checkpoint_every = 100, resume = false }
-- Table 6 of the paper: AdamW betas (0.9, 0.95), lr 3e-5, warmup ratio 0.1, weight decay 0.01,
-- sequence length 4096, bf16, global batch 64 sequences (micro batch 4 x 16 accumulation steps
-- on one GPU). Explicit --key=value options still win over the preset.
local presets = {
  paper = { lr = 3e-5, beta1 = 0.9, beta2 = 0.95, warmup = 0.1, weight_decay = 0.01, seq_len = 4096,
            dtype = "bfloat16", micro_batch = 4, grad_accum = 16, max_bytes = 0, bench_limit = 0,
            eval_every = 0, val_windows = 256, protocols = "logit,generate" },
}
do
  local given = args.parse(argv or arg or {})
  if given.preset and given.preset ~= "" then
    local p = presets[given.preset]
    if not p then error(("unknown --preset=%s (known: paper)"):format(tostring(given.preset)), 0) end
    for k, v in pairs(p) do defaults[k] = v end
  end
end
local cfg = exp.args(defaults, argv)
-- --checkpoint_dir=DIR: each plan checkpoints into DIR/<plan> every --checkpoint_every steps;
-- --resume=true continues each plan from its latest checkpoint (a plan with none starts at
-- step 0; no checkpoint in any plan's folder is an error naming DIR)
local plan_names = {}
for name in cfg.plans:gmatch("[^,]+") do plan_names[#plan_names + 1] = name end
local checkpoints = exp.checkpoints(cfg, plan_names)

local load_opts = cfg.dtype ~= "" and { dtype = cfg.dtype } or nil
local base = lt.model.load(cfg.model == exp.default_model_path and exp.default_model() or cfg.model, load_opts)

-- held-out windows of a text (fortune format or JSONL), packed with the base's tokenizer
local function pack(name, inputs, val, max_bytes)
  local dir = cfg.out .. "/" .. name
  lt.fs.remove(dir)  -- lt.fs: no shell; refuses a folder that ltrun did not make
  lt.fs.mkdir(dir)
  return dir, lt.data.pack{ tokenizer = cfg.model, inputs = inputs, out = dir, val = val, seed = 1,
                            max_bytes = max_bytes, progress = false }
end
lt.fs.mkdir(cfg.out)
-- the new domain: a text / JSONL file packed here, or a folder `ltrun data pack` made
local packed, corpus
local index = io.open(cfg.corpus .. "/index.json")
if index then
  index:close()
  packed, corpus = cfg.corpus, lt.data.info(cfg.corpus)
else
  packed, corpus = pack("new_corpus", { cfg.corpus }, 0.05, cfg.max_bytes)
end
lt.run.param{ train_tokens = corpus.train_tokens, val_tokens = corpus.val_tokens }
local new_val = lt.data.windows(packed, { split = "val", seq_len = math.min(cfg.seq_len, 512), n = cfg.val_windows })
local old_path = cfg.old ~= "" and cfg.old or cfg.model .. "/heldout.txt"
local old_val
local old_file = io.open(old_path)
if old_file then
  old_file:close()
  local dir = pack("old_domain", { old_path }, 0, 0)
  old_val = lt.data.windows(dir, { split = "train", seq_len = math.min(cfg.seq_len, 512), n = cfg.val_windows })
  lt.run.param("old_domain", old_path)
elseif cfg.old ~= "" then
  error(("freeze_deep: --old=%s: no such file"):format(cfg.old), 0)
else
  io.stderr:write(("freeze_deep: %s is missing: no old-domain loss (give --old=FILE)\n"):format(old_path))
end

local benches = {}
for spec in cfg.bench:gmatch("[^,]+") do benches[#benches + 1] = spec end
local protocols = {}
for p in cfg.protocols:gmatch("[^,]+") do
  if p ~= "cloze" and p ~= "logit" and p ~= "generate" then
    error(("freeze_deep: --protocols: unknown protocol %s (cloze, logit, generate)"):format(p), 0)
  end
  protocols[#protocols + 1] = p
end
if #protocols == 0 then error("freeze_deep: --protocols is empty (cloze, logit, generate)", 0) end
local headline = protocols[1]
-- the summaries each protocol gives (generate: two scoring rules)
local shown_protocols = {}
for _, p in ipairs(protocols) do
  shown_protocols[#shown_protocols + 1] = p
  if p == "generate" then shown_protocols[#shown_protocols + 1] = "generate_contains" end
end

-- losses and benchmark scores of a model, logged to the current run
local tasks = require "lt.tasks"
local task_items = cfg.task_probe > 0 and tasks.load("wordnet", { split = "train", n = cfg.task_probe, seed = 3 }) or nil
local function measure(m, r)
  if task_items then
    r.task_acc = tasks.task_accuracy(m, task_items).acc
    lt.run.log("task_acc", r.task_acc)
  end
  r.new_loss = lt.train.eval_loss(m, new_val)
  lt.run.log("new_loss", r.new_loss)
  if old_val then
    r.old_loss = lt.train.eval_loss(m, old_val)
    lt.run.log("old_loss", r.old_loss)
  end
  r.scores = {}
  for _, spec in ipairs(benches) do
    r.scores[spec] = lt.eval.run(m, spec, { limit = cfg.bench_limit > 0 and cfg.bench_limit or nil,
                                             shots = cfg.shots, protocols = protocols })
  end
  r.acc = {}  -- the first benchmark's accuracy by protocol
  for _, p in ipairs(shown_protocols) do r.acc[p] = r.scores[benches[1]][p].acc end
  r.headline, r.acc_headline = headline, r.acc[headline]
  return r
end

local results = {}
results.base = lt.run.child("base", function()
  return measure(base, { trainable_params = 0, wall_s = 0, tokens_per_s = 0 })
end)

-- the parts every plan freezes besides its blocks
local extra = {}
if cfg.freeze_embeddings then extra[#extra + 1] = "embeddings" end
if cfg.freeze_head then extra[#extra + 1] = "final_norm"; extra[#extra + 1] = "lm_head" end
local function with_extra(blocks)
  local spec = { blocks }
  for _, e in ipairs(extra) do spec[#spec + 1] = e end
  return spec
end
local all_plans = {
  full          = with_extra({}),
  train_shallow = with_extra(lt.layers.deep(base, cfg.split)),
  train_deep    = with_extra(lt.layers.shallow(base, cfg.split)),
}
local plans = {}
for name in cfg.plans:gmatch("[^,]+") do
  plans[name] = all_plans[name] or error(("freeze_deep: --plans: unknown plan %s (full, train_shallow, train_deep)"):format(name), 0)
end
local curves = {}
for name, spec in exp.sorted(plans) do
  results[name] = lt.run.child(name, function()
    lt.run.param{ plan = name, freeze = lt.layers.describe(spec), freeze_embeddings = cfg.freeze_embeddings,
                  freeze_head = cfg.freeze_head }
    local m = base:clone():freeze(spec)
    local ck = checkpoints(name)
    local r = lt.train.causal_lm(m, { data = packed, steps = cfg.steps, lr = cfg.lr, warmup = cfg.warmup,
                                      weight_decay = cfg.weight_decay, betas = { cfg.beta1, cfg.beta2 },
                                      seq_len = cfg.seq_len, micro_batch = cfg.micro_batch,
                                      grad_accum = cfg.grad_accum, clip_grad = cfg.clip,
                                      eval_every = cfg.eval_every > 0 and cfg.eval_every or nil, seed = 7,
                                      checkpoint_dir = ck.checkpoint_dir, checkpoint_every = ck.checkpoint_every,
                                      resume = ck.resume })
    curves[name] = r.losses
    lt.run.log("wall_s_total", r.wall_s)
    lt.train.weight_change(m, base, { log = "weight_change" })
    measure(m, r)
    m:free()
    return r
  end)
end

-- ---- the comparison ---------------------------------------------------------------------------
local b = results.base
print(("base model %s: new-domain loss %.4f, old-domain loss %s; %s"):format(cfg.model, b.new_loss,
      b.old_loss and ("%.4f"):format(b.old_loss) or "n/a", cfg.bench))
print("gain = base new-domain loss - plan's (higher: learnt more); old +/- = plan's old-domain loss - base's"
      .. " (higher: forgot more);")
print(("acc PROTOCOL = %s accuracy under that protocol; retention = plan's / base's (%s protocol)"):format(
      benches[1], headline))
local short = { cloze = "cloze", logit = "logit", generate = "gen", generate_contains = "contains" }
local head = ("%-14s %10s %7s %8s %9s %7s %9s %7s %8s"):format("plan", "trainable", "wall s", "tok/s",
      "new loss", "gain", "old loss", "old +/-", "task acc")
for k, p in ipairs(shown_protocols) do
  head = head .. (" %9s"):format("acc " .. short[p])
  if k == 1 then head = head .. (" %9s"):format("retention") end
end
print(head)
for name, r in exp.sorted(results) do
  local line = ("%-14s %10d %7.1f %8.0f %9.4f %7.3f %9s %7s %8s"):format(name, r.trainable_params,
        r.wall_s, r.tokens_per_s, r.new_loss, b.new_loss - r.new_loss,
        r.old_loss and ("%.4f"):format(r.old_loss) or "n/a",
        r.old_loss and ("%+.3f"):format(r.old_loss - b.old_loss) or "n/a",
        r.task_acc and ("%.3f"):format(r.task_acc) or "n/a")
  for k, p in ipairs(shown_protocols) do
    line = line .. (" %9.3f"):format(r.acc[p])
    if k == 1 then line = line .. (" %9.2f"):format(b.acc[p] > 0 and r.acc[p] / b.acc[p] or 0) end
  end
  print(line)
end
for k = 2, #benches do
  local line = {}
  for name, r in exp.sorted(results) do
    line[#line + 1] = ("%s %.3f"):format(name, r.scores[benches[k]][headline].acc)
  end
  print(("%s accuracy (%s): %s"):format(benches[k], headline, table.concat(line, ", ")))
end
for _, spec in ipairs(benches) do
  if not b.scores[spec].logit then break end  -- the letter check is about the logit protocol
  local first = b.scores[spec]
  local answers = {}
  for _, it in ipairs(first.items) do
    if it.protocol == "logit" then answers[it.prediction] = (answers[it.prediction] or 0) + 1 end
  end
  local spread = {}
  for letter, n in exp.sorted(answers) do spread[#spread + 1] = letter .. "=" .. n end
  print(("%s: the base's logit answers %s"):format(spec, table.concat(spread, " ")))
  local most, n_items = 0, 0
  for _, n in pairs(answers) do most, n_items = math.max(most, n), n_items + n end
  if n_items > 0 and most >= 0.9 * n_items then
    print(("warning: the base gives one letter to %d of %d %s items: the letter protocols cannot show what the "
           .. "plans cost on that benchmark; task_acc, old_loss and the cloze protocol can"):format(most, n_items, spec))
  end
end

-- ---- figures ------------------------------------------------------------------------------------
local order = { "full", "train_shallow", "train_deep" }
local series = {}
for _, name in ipairs(order) do
  if curves[name] then series[#series + 1] = { name = name, values = curves[name] } end
end
lt.run.artifact(svg.lines(cfg.out .. "/loss_curves.svg", {
  title = ("Training loss on the new domain by plan (%d steps)"):format(cfg.steps),
  x_title = "step", y_title = "training loss", series = series, smooth = math.max(1, math.floor(cfg.steps / 30)) }),
  { kind = "figure" })
for _, spec in ipairs(benches) do
  for _, protocol in ipairs(shown_protocols) do
    local groups, cats = {}, {}
    local shown = {}
    for _, name in ipairs{ "base", "full", "train_shallow", "train_deep" } do
      if results[name] then shown[#shown + 1] = name end
    end
    for _, name in ipairs(shown) do
      local s = results[name].scores[spec][protocol]
      for cat in pairs(s.by_category) do cats[cat] = true end
    end
    local cat_list = {}
    for cat in exp.sorted(cats) do cat_list[#cat_list + 1] = cat end
    local labels = { "average" }
    for _, c in ipairs(cat_list) do labels[#labels + 1] = c end
    for _, name in ipairs(shown) do
      local s = results[name].scores[spec][protocol]
      local values = { s.acc_macro or s.acc }
      for _, c in ipairs(cat_list) do values[#values + 1] = s.by_category[c] or 0 end
      groups[#groups + 1] = { name = name, values = values }
    end
    local file = ("%s/scores_%s_%s.svg"):format(cfg.out, spec:gsub("[^%w]+", "_"), protocol)
    lt.run.artifact(svg.bars(file, { title = ("%s accuracy by plan and category (%s protocol)"):format(spec, protocol),
                                     categories = labels, series = groups, y_title = "accuracy", ymin = 0, ymax = 1 }),
                    { kind = "figure" })
  end
end
print(("figures: %s/loss_curves.svg, %s/scores_*.svg"):format(cfg.out, cfg.out))
return results

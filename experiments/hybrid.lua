-- experiments/hybrid.lua: the first paper's two hybrids (Freeze Deep, Train Shallow, §6,
-- Table 7 rows 4-5) at tiny scale, from two donors pre-trained on the same data with the same
-- tokenizer:
--   nemotron_qwen3  Nemotron-H layers shallow (the first `split` of the Nemotron-H donor's
--                   layers, with its embeddings), pretrained Qwen3 decoder layers deep (the last
--                   of the Qwen3 donor's blocks, with its final norm and LM head);
--   qwen3_nemotron  the reverse: Qwen3 blocks shallow, Nemotron-H layers deep.
-- Each is assembled with lt.model.hybrid (an ltrun_hybrid folder under --models) and then
-- continued-pre-trained under experiments/freeze_deep.lua's setup (same corpus, held-out sets,
-- hyper-parameters and measures; called as a child run with --plans=train_shallow): the shallow
-- layers (and the embeddings, final norm and head, as freeze_deep's default) train, the deep
-- layers are frozen. With --donors=true both donors go through the same plan as reference rows.
-- Printed side by side (and in `ltrun sql @hybrid`): layers, parameters, trainable parameters,
-- training wall time and tokens/s, held-out loss on the new domain before -> after, on the old
-- domain, the antonym task.
-- Donors: --qwen3 (default: the embedded base, models/tiny-qwen3, made by pretrain_tiny.lua when
-- missing) and --nemotron (default models/tiny-nemotron-h: made here when missing by
-- pretrain_tiny.lua --arch=nemotron_h --pattern=PATTERN with the Qwen3 donor's tokenizer,
-- --nemotron_steps steps on the same corpus; --chunk=16: the Mamba2 scan's chunk size, which
-- does not change what it computes but HF's 128 pads the 64-token windows and is ~20x slower
-- on CPU).
local exp = require "lt.experiment"
local argv = type((...)) == "table" and (...) or nil
local cfg = exp.args({ qwen3 = exp.default_model_path, nemotron = "models/tiny-nemotron-h", pattern = "M*M-M*M-",
                       nemotron_steps = 300, chunk = 16, split = 0.5, steps = 300, donors = false, models = "models/hybrid",
                       bench = "antonyms,antonyms_heldout", out = "artifacts/hybrid", seed = 1,
                       checkpoint_dir = "", checkpoint_every = 100, resume = false }, argv)
-- checkpoints: each row's training in DIR/<row>/train_shallow (freeze_deep's folder per plan)
-- every --checkpoint_every steps; on --resume=true a row with a checkpoint continues from it,
-- one without starts afresh, and no checkpoint in any row is an error naming DIR (checked
-- here, before any donor is made)
do
  local names = { "nemotron_qwen3/train_shallow", "qwen3_nemotron/train_shallow" }
  if cfg.donors then
    names[#names + 1] = "donor_nemotron/train_shallow"
    names[#names + 1] = "donor_qwen3/train_shallow"
  end
  exp.checkpoints(cfg, names)
end
local function ck_args(name)
  if cfg.checkpoint_dir == "" then return {} end
  local dir = cfg.checkpoint_dir .. "/" .. name
  return { "--checkpoint_dir=" .. dir, "--checkpoint_every=" .. cfg.checkpoint_every,
           "--resume=" .. tostring(cfg.resume and lt.train.latest_checkpoint(dir .. "/train_shallow") ~= nil) }
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local qwen3 = cfg.qwen3 == exp.default_model_path and exp.default_model() or cfg.qwen3
local nemotron = cfg.nemotron
if not exists(nemotron .. "/config.json") then
  io.stderr:write(("no model at %s: making the Nemotron-H donor (pretrain_tiny.lua --arch=nemotron_h)\n"):format(nemotron))
  lt.run.child("pretrain_nemotron", assert(loadfile(exp.root .. "/experiments/pretrain_tiny.lua")), {
    "--out=" .. nemotron, "--arch=nemotron_h", "--pattern=" .. cfg.pattern, "--tokenizer=" .. qwen3 .. "/tokenizer.json",
    "--steps=" .. cfg.nemotron_steps, "--chunk=" .. cfg.chunk, "--hidden=" .. lt.model.load(qwen3).config.hidden_size,
    "--layers=" .. #cfg.pattern })
end

-- ---- the two hybrids ----------------------------------------------------------------------------
local function count(dir) return lt.model.info(dir).n_layers end
local n_q, n_n = count(qwen3), count(nemotron)
local b_q, b_n = math.floor(cfg.split * n_q + 0.5), math.floor(cfg.split * n_n + 0.5)
local function layers(dir, lo, hi)
  local out = {}
  for l = lo, hi do out[#out + 1] = { from = dir, layer = l } end
  return out
end
local function concat(a, b)
  local out = {}
  for _, x in ipairs(a) do out[#out + 1] = x end
  for _, x in ipairs(b) do out[#out + 1] = x end
  return out
end
local specs = {
  nemotron_qwen3 = { embed = nemotron, head = qwen3, shallow = b_n,
                     layers = concat(layers(nemotron, 0, b_n - 1), layers(qwen3, b_q, n_q - 1)) },
  qwen3_nemotron = { embed = qwen3, head = nemotron, shallow = b_q,
                     layers = concat(layers(qwen3, 0, b_q - 1), layers(nemotron, b_n, n_n - 1)) },
}
lt.fs.mkdir(cfg.models)
local rows = {}  -- name -> {dir, shallow, n_layers, kinds}
for name, s in exp.sorted(specs) do
  local dir = cfg.models .. "/" .. name
  lt.fs.remove(dir)  -- refused for a folder that ltrun did not make
  local r = lt.model.hybrid{ out = dir, embed = s.embed, head = s.head, layers = s.layers, seed = cfg.seed }
  rows[name] = { dir = dir, shallow = s.shallow, n_layers = r.n_layers, kinds = r.layer_types, params = r.parameters }
  print(("%s: %s, %d layers (%s), %d parameters"):format(name, dir, r.n_layers, table.concat(r.layer_types, ","),
                                                          r.parameters))
end
if cfg.donors then
  rows.donor_qwen3 = { dir = qwen3, shallow = b_q, n_layers = n_q }
  rows.donor_nemotron = { dir = nemotron, shallow = b_n, n_layers = n_n }
end

-- ---- continued pre-training, shallow trained / deep frozen, under freeze_deep's setup ---------------
local freeze_deep = assert(loadfile(exp.root .. "/experiments/freeze_deep.lua"))
local results = {}
for name, row in exp.sorted(rows) do
  local a = { "--model=" .. row.dir, "--plans=train_shallow", "--split=" .. row.shallow / row.n_layers,
              "--old=" .. qwen3 .. "/heldout.txt", "--steps=" .. cfg.steps, "--bench=" .. cfg.bench,
              "--out=" .. cfg.out .. "/" .. name }
  for _, x in ipairs(ck_args(name)) do a[#a + 1] = x end
  results[name] = lt.run.child(name, freeze_deep, a)
end

-- ---- side by side (Table 7 rows 4-5) -----------------------------------------------------------------
local headline = "n/a"  -- freeze_deep.lua's headline protocol (its first --protocols)
for _, res in pairs(results) do headline = res.base.headline; break end
print(("\nhybrids trained shallow / frozen deep, %d steps of freeze_deep.lua's continued pre-training "
       .. "(Chinese fortunes); new/old loss: held-out loss before -> after; task: the antonym task"):format(cfg.steps))
print(("%-15s %-28s %9s %10s %7s %7s %17s %17s %13s %9s"):format("model", "layers (shallow | deep)", "params",
      "trainable", "wall s", "tok/s", "new loss", "old loss", "task acc", "acc " .. headline))
for name, row in exp.sorted(rows) do
  local res = results[name]
  local b, t = res.base, res.train_shallow
  local m = lt.model.info(row.dir)
  local kinds = row.kinds or {}
  if not row.kinds then
    local model = lt.model.load(row.dir)
    for l = 0, model.n_layers - 1 do kinds[#kinds + 1] = model:layer(l).kind end
    model:free()
  end
  local short = { decoder = "D", mamba = "M", attention = "*", mlp = "-" }
  local code = ""
  for l, k in ipairs(kinds) do
    code = code .. (short[k] or "?") .. (l == row.shallow and "|" or "")
  end
  print(("%-15s %-28s %9d %10d %7.1f %7.0f %7.3f -> %6.3f %7.3f -> %6.3f %5.3f -> %5.3f %9.3f"):format(
    name, code, m.parameters, t.trainable_params, t.wall_s, t.tokens_per_s, b.new_loss, t.new_loss,
    b.old_loss or 0 / 0, t.old_loss or 0 / 0, b.task_acc or 0 / 0, t.task_acc or 0 / 0, t.acc_headline))
  for key, v in pairs{ trainable_params = t.trainable_params, wall_s = t.wall_s, tokens_per_s = t.tokens_per_s,
                       new_loss = t.new_loss, base_new_loss = b.new_loss, old_loss = t.old_loss,
                       base_old_loss = b.old_loss, task_acc = t.task_acc, base_task_acc = b.task_acc } do
    lt.run.log(name .. "/" .. key, v)
  end
end
print("layers: D Qwen3 decoder block, M Mamba2, * attention, - MLP (Nemotron-H); | the split")
print("`ltrun sql @hybrid` shows this table again")

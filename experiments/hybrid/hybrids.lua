-- experiments/hybrid/hybrids.lua: the two hybrids of *Freeze Deep, Train Shallow* §6
-- (experiments/hybrid/hybrid.lua) from two donors of one tokenizer: their layer lists, the
-- assembled folders, and the side-by-side table of the hybrids trained shallow / frozen deep.
local study = require "lt.study"
local report = require "lt.report"
local M = {}

local function layers(dir, lo, hi, out)
  for l = lo, hi do out[#out + 1] = { from = dir, layer = l } end
  return out
end

-- Assembles nemotron_qwen3 (the Nemotron-H donor's first `split` of layers with its
-- embeddings, then the Qwen3 donor's deep blocks with its final norm and head) and
-- qwen3_nemotron (the reverse) into MODELS/<name> (lt.model.hybrid), and with donors = true
-- adds the donors as rows. → {name = {dir =, shallow = layers before the split, n_layers =,
-- kinds =, params =}}
function M.assemble(qwen3, nemotron, o)
  local n_q, n_n = lt.model.info(qwen3).n_layers, lt.model.info(nemotron).n_layers
  -- each donor's shallow layers: shallow:SPLIT of its layers (lt.layers.parse), as freeze_deep's plans
  local shallow = ("shallow:%.17g"):format(o.split)
  local b_q, b_n = #lt.layers.parse(n_q, shallow, "--split"), #lt.layers.parse(n_n, shallow, "--split")
  local specs = {
    nemotron_qwen3 = { embed = nemotron, head = qwen3, shallow = b_n,
                       layers = layers(qwen3, b_q, n_q - 1, layers(nemotron, 0, b_n - 1, {})) },
    qwen3_nemotron = { embed = qwen3, head = nemotron, shallow = b_q,
                       layers = layers(nemotron, b_n, n_n - 1, layers(qwen3, 0, b_q - 1, {})) },
  }
  lt.fs.mkdir(o.models)
  local rows = {}
  for name, s in study.sorted(specs) do
    local dir = o.models .. "/" .. name
    lt.fs.remove(dir)  -- refused for a folder that ltrun did not make
    local r = lt.model.hybrid{ out = dir, embed = s.embed, head = s.head, layers = s.layers }
    rows[name] = { dir = dir, shallow = s.shallow, n_layers = r.n_layers, kinds = r.layer_types, params = r.parameters }
    print(("%s: %s, %d layers (%s), %d parameters"):format(name, dir, r.n_layers, table.concat(r.layer_types, ","),
                                                            r.parameters))
  end
  if o.donors then
    rows.donor_qwen3 = { dir = qwen3, shallow = b_q, n_layers = n_q }
    rows.donor_nemotron = { dir = nemotron, shallow = b_n, n_layers = n_n }
  end
  return rows
end

-- "DD|MM" etc.: each layer's kind (D Qwen3 block, M Mamba2, * attention, - MLP), | the split
local function code(row)
  local kinds = row.kinds
  if not kinds then
    kinds = {}
    local model = lt.model.load(row.dir)
    for l = 0, model.n_layers - 1 do kinds[#kinds + 1] = model:layer(l).kind end
    model:free()
  end
  local short, s = { decoder = "D", mamba = "M", attention = "*", mlp = "-" }, ""
  for l, k in ipairs(kinds) do s = s .. (short[k] or "?") .. (l == row.shallow and "|" or "") end
  return s
end

-- Table 7 rows 4-5: each row's freeze_deep results (base and train_shallow) side by side,
-- logged as ROW/KEY metrics of the study run (`ltrun sql @hybrid`)
function M.print(rows, results, steps)
  local headline = "n/a"  -- freeze_deep's headline protocol (its first --protocols)
  for _, res in pairs(results) do headline = res.base.headline; break end
  print(("\nhybrids trained shallow / frozen deep, %d steps of freeze_deep.lua's continued pre-training "
         .. "(Chinese fortunes); new/old loss: held-out loss before -> after; task: the antonym task"):format(steps))
  local function arrow(a, b) return ("%.3f -> %.3f"):format(a or 0 / 0, b or 0 / 0) end
  local out = {}
  for name, row in study.sorted(rows) do
    local b, t = results[name].base, results[name].train_shallow
    out[#out + 1] = { model = name, layers = code(row), params = lt.model.info(row.dir).parameters,
                      trainable = t.trainable_params, wall_s = t.wall_s, tokens_per_s = t.tokens_per_s,
                      new_loss = arrow(b.new_loss, t.new_loss), old_loss = arrow(b.old_loss, t.old_loss),
                      task = arrow(b.task_acc, t.task_acc), acc = t.acc_headline }
    for key, v in pairs{ trainable_params = t.trainable_params, wall_s = t.wall_s, tokens_per_s = t.tokens_per_s,
                         new_loss = t.new_loss, base_new_loss = b.new_loss, old_loss = t.old_loss,
                         base_old_loss = b.old_loss, task_acc = t.task_acc, base_task_acc = b.task_acc } do
      lt.run.log(name .. "/" .. key, v)
    end
  end
  report.table{ columns = { { "model", "%-15s" }, { "layers", "%-28s", head = "layers (shallow | deep)" },
                            { "params", "%9d" }, { "trainable", "%10d" }, { "wall_s", "%7.1f", head = "wall s" },
                            { "tokens_per_s", "%7.0f", head = "tok/s" }, { "new_loss", "%17s", head = "new loss" },
                            { "old_loss", "%17s", head = "old loss" }, { "task", "%17s", head = "task acc" },
                            { "acc", "%9.3f", head = "acc " .. headline } }, rows = out }
  print("layers: D Qwen3 decoder block, M Mamba2, * attention, - MLP (Nemotron-H); | the split")
  print("`ltrun sql @hybrid` shows this table again")
end

return M

-- experiments/freeze_deep.lua: Freeze Deep, Train Shallow: continued pre-training of one base
-- model on a corpus of another domain (Chinese fortunes) under three plans with the same data,
-- steps and hyper-parameters: `full`, `train_shallow` (deep half frozen), `train_deep`
-- (shallow half frozen). Each child run logs its trainable parameters, wall time, loss curve,
-- validation loss, per-layer weight change and benchmark accuracy (logit and generate
-- protocols, --bench=antonyms by default; ceval:DIR etc. on a GPU node); the base model is
-- scored the same way in a child run `base`. `ltrun sql @freeze_deep` gives the table again.
-- Makes the base model (experiments/pretrain_tiny.lua) when it is missing.
local exp = require "lt.experiment"
local cfg = exp.args{ model = "models/tiny-qwen3", corpus = "/usr/share/games/fortunes/chinese",
                      steps = 300, lr = 1e-3, split = 0.5, seq_len = 64, micro_batch = 8,
                      grad_accum = 1, warmup = 0.1, eval_every = 100, max_bytes = 1000000,
                      bench = "antonyms", bench_limit = 100 }

local base = lt.model.load(cfg.model == exp.default_model_path and exp.default_model() or cfg.model)
local packed = cfg.model .. ".freeze_deep_corpus"
lt.fs.remove(packed)  -- lt.fs: no shell; refuses a folder that ltrun did not make
lt.fs.mkdir(packed)
local corpus = lt.data.pack{ tokenizer = cfg.model, inputs = { cfg.corpus }, out = packed, val = 0.05,
                             seed = 1, max_bytes = cfg.max_bytes }
lt.run.param{ train_tokens = corpus.train_tokens, val_tokens = corpus.val_tokens }
local val = lt.data.windows(packed, { split = "val", seq_len = cfg.seq_len, n = 64 })
local base_val = lt.train.eval_loss(base, val)
lt.run.param("base_val_loss", base_val)

local function score(m)  -- benchmark accuracy under both protocols, logged to the current run
  local e = lt.eval.run(m, cfg.bench, { limit = cfg.bench_limit, protocols = { "logit", "generate" } })
  return e.logit.acc, e.generate.acc
end

local results = {}
results.base = lt.run.child("base", function()
  local acc_logit, acc_generate = score(base)
  return { trainable_params = 0, wall_s = 0, tokens_per_s = 0, val_loss = base_val,
           acc_logit = acc_logit, acc_generate = acc_generate }
end)

local plans = {
  full          = {},
  train_shallow = { freeze = lt.layers.deep(base, cfg.split) },
  train_deep    = { freeze = lt.layers.shallow(base, cfg.split) },
}
for name, plan in exp.sorted(plans) do
  results[name] = lt.run.child(name, function()
    lt.run.param{ plan = name, freeze = lt.layers.describe(plan.freeze or {}) }
    local m = base:clone():freeze(plan.freeze or {})
    local r = lt.train.causal_lm(m, { data = packed, steps = cfg.steps, lr = cfg.lr, warmup = cfg.warmup,
                                      weight_decay = 0.01, betas = { 0.9, 0.95 }, seq_len = cfg.seq_len,
                                      micro_batch = cfg.micro_batch, grad_accum = cfg.grad_accum,
                                      clip = 1.0, eval_every = cfg.eval_every, seed = 7 })
    r.val_loss = lt.train.eval_loss(m, val)  -- the same windows for every plan and the base
    lt.run.log("final_val_loss", r.val_loss)
    lt.run.log("wall_s_total", r.wall_s)
    lt.train.weight_change(m, base, { log = "weight_change" })
    r.acc_logit, r.acc_generate = score(m)
    m:free()
    return r
  end)
end

print(("base model %s, validation loss before training %.4f"):format(cfg.model, base_val))
print(("%-14s %12s %9s %10s %10s %9s %9s"):format("plan", "trainable", "wall s", "tokens/s", "val loss",
                                                  "acc logit", "acc gen"))
for name, r in exp.sorted(results) do
  print(("%-14s %12d %9.1f %10.0f %10.4f %9.3f %9.3f"):format(name, r.trainable_params, r.wall_s,
        r.tokens_per_s, r.val_loss, r.acc_logit, r.acc_generate))
end

-- experiments/_template/_template.lua: a study to copy. Copy the folder to experiments/NAME/,
-- rename this file NAME.lua, set `name` below, and say here in one paragraph what the study
-- asks and what it prints. This one asks how much a model's held-out loss on a text falls when
-- each plan of --plans trains on it for --steps steps (every block, or the shallow half).
local study = require "lt.study"
local report = require "lt.report"

return study.study{
  name = "_template", help = "held-out loss before and after training, per freeze plan",
  args = study.merge_args(study.train_args{ steps = 20, lr = 1e-3, seq_len = 32 }, {
    model = { "", "model folder (\"\": the embedded default base, lt.models tiny-qwen3)",
              path = true },
    corpus = { "/usr/share/games/fortunes/chinese", "a text file to train on", path = true },
    plans = { "all,shallow", "plans: all (every block) or shallow (the first half)", list = true,
              choices = { "all", "shallow" } },
    out = { "artifacts/_template", "folder for the packed data" } }),
  run = function(cfg)
    local model = lt.models.resolve(cfg.model, "tiny-qwen3")  -- made on first use when ""
    lt.fs.remove(cfg.out); lt.fs.mkdir(cfg.out)  -- a fresh folder (lt.fs: only folders ltrun made)
    lt.data.pack{ tokenizer = model, inputs = { cfg.corpus }, out = cfg.out, val = 0.05,
                  max_bytes = 100000, progress = false }
    local val = lt.data.windows(cfg.out, { split = "val", seq_len = cfg.seq_len, n = 16 })
    local base = lt.model.load(model)
    local before, rows = lt.train.eval_loss(base, val), {}
    for _, plan in ipairs(study.list(cfg.plans)) do
      local after = lt.run.child(plan, function()  -- a child run per plan, with its own status
        local blocks = plan == "all" and "all" or "shallow:0.5"  -- lt.layers.parse's grammar
        local m = base:clone():train_only(lt.layers.spec(base, blocks, "--plans"))
        lt.train.causal_lm(m, study.train_options(cfg, { data = cfg.out }))
        local loss = lt.train.eval_loss(m, val)
        lt.run.log("heldout_loss", loss)
        return loss
      end)
      rows[#rows + 1] = { plan = plan, before = before, after = after }
    end
    report.table{ columns = { { "plan", "%-8s" }, { "before", "%8.4f" }, { "after", "%8.4f" } },
                  rows = rows }
    return rows
  end }

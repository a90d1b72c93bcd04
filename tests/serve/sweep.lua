-- tests/serve/sweep.lua: a study shaped like the paper's for the web view's tests
-- (tests/cli/serve_browser.sh): a figure registered as kind="figure" (an SVG), one-value eval
-- metrics, curves in groups (train/loss, train/lr up to 1.2e-3, grad_norm up to 3.6e-4,
-- tokens up to 20,000 for a log axis) and a sweep of N children, each logging `loss`, the
-- even ones also `acc` (so that a run's colour must not depend on which others have a metric),
-- `val_loss` once at step 60, every tenth `best_loss` (a column most lack); child i has params
-- lr (log-spaced 1e-4 to 1e-2, written in full double precision), plan (i % 3), wd (4 values),
-- seed (i % 5) and out (a path: no default column).
-- ltrun --db DB tests/serve/sweep.lua --out=DIR [--children=N]
local study = require "lt.study"
local cfg = study.args{ out = "sweep", children = 210 }
os.execute("mkdir -p '" .. cfg.out .. "'")
local fig = cfg.out .. "/accuracy.svg"
local f = assert(io.open(fig, "w"))
f:write('<svg xmlns="http://www.w3.org/2000/svg" width="120" height="60"><rect x="0" y="0" width="120" height="60" fill="#2171b5"/></svg>')
f:close()
lt.run.artifact(fig, { kind = "figure" })
lt.run.param("model", "tiny")
lt.run.param("a_very_long_parameter_name_for_the_table", "a_long_unbroken_value_" .. string.rep("x", 30))
for s = 0, 39 do
  lt.run.log("train/loss", 2 / (1 + s), { step = s })
  lt.run.log("train/lr", 0.0012 * math.min(1, s / 10), { step = s })
  lt.run.log("grad_norm", 3.6e-4 * s / 39, { step = s })
  lt.run.log("tokens", 1 + 500 * s, { step = s })
end
for _, name in ipairs{ "eval/ceval_acc", "eval/mmlu_acc", "eval/gsm8k_acc", "tok_s", "params_m" } do
  lt.run.log(name, #name / 20, { step = 40 })
end
for i = 1, cfg.children do
  lt.run.child("lr_" .. i, function()
    lt.run.param("lr", 1e-4 * 10 ^ (2 * (i - 1) / math.max(1, cfg.children - 1)))
    lt.run.param("plan", "plan_" .. (i % 3))
    lt.run.param("wd", 10 ^ -(1 + i % 4))
    lt.run.param("seed", i % 5)
    lt.run.param("out", cfg.out .. "/lr_" .. i)
    lt.run.log("val_loss", (1 + i / cfg.children) / 6, { step = 60 })
    if i % 10 == 0 then lt.run.log("best_loss", 0.1, { step = 4 }) end
    for s = 0, 4 do lt.run.log("loss", (1 + i / cfg.children) / (1 + s), { step = s }) end
    if i % 2 == 0 then lt.run.log("acc", i / cfg.children, { step = 4 }); lt.run.log("acc", i / cfg.children, { step = 5 }) end
  end)
end

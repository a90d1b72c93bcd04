-- tests/serve/sweep.lua: a study shaped like the paper's for the web view's tests
-- (tests/cli/serve_browser.sh): a figure registered as kind="figure" (an SVG), one-value eval
-- metrics, curves in groups (train/loss, train/lr up to 1.2e-3, grad_norm up to 3.6e-4,
-- tokens up to 20,000 for a log axis) and a sweep of N children, each logging `loss`, the
-- even ones also `acc` (so that a run's colour must not depend on which others have a metric).
-- ltrun --db DB tests/serve/sweep.lua --out=DIR [--children=N]
local exp = require "lt.study"
local cfg = exp.args{ out = "sweep", children = 210 }
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
    lt.run.param("lr", 1e-4 * i)
    lt.run.param("plan", "plan_" .. (i % 3))
    for s = 0, 4 do lt.run.log("loss", (1 + i / cfg.children) / (1 + s), { step = s }) end
    if i % 2 == 0 then lt.run.log("acc", i / cfg.children, { step = 4 }); lt.run.log("acc", i / cfg.children, { step = 5 }) end
  end)
end

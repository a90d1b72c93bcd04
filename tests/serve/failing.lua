-- tests/serve/failing.lua: a study that logs one-value metrics only and then fails with a
-- traceback a few calls deep, for the web view's tests (tests/cli/serve_browser.sh): the runs
-- list shows its error in one line, its page the whole traceback, no chart controls, no chart.
-- ltrun --db DB tests/serve/failing.lua
local study = require "lt.study"
local cfg = study.args{ batch = 7 }
lt.run.param("lr", 0.001)
lt.run.log("final_acc", 0.5, { step = 10 })
lt.run.log("tok_s", 1234, { step = 10 })
local function read_batch(k) error("the data ran out at batch " .. k) end
local function train() for k = 1, cfg.batch do if k == cfg.batch then read_batch(k) end end end
train()

-- experiments/demo.lua: the shape of a freeze study on a toy residual MLP stack, runnable
-- anywhere in seconds: the same data and steps under three plans (train all blocks, only
-- the shallow half, only the deep half), each a child run with its loss curve, trainable
-- parameter count and per-layer weight change. (The LLM version is freeze_deep.lua.)
local exp = require "lt.experiment"
local cfg = exp.args{ layers = 6, width = 32, samples = 512, steps = 150, lr = 0.05, split = 0.5 }

-- a fixed random teacher stack makes the targets; students start from one shared init
lt.manual_seed(1234)
local function stack(scale)
  local w = {}
  for l = 1, cfg.layers do w[l] = lt.randn(cfg.width, cfg.width) * (scale / math.sqrt(cfg.width)) end
  return w
end
local function forward(w, x)
  for l = 1, #w do x = x + (x:matmul(w[l])):tanh() end  -- residual blocks
  return x
end
local teacher, init = stack(1.0), stack(0.5)
local x = lt.randn(cfg.samples, cfg.width)
local y = forward(teacher, x)

local b = math.floor(cfg.split * cfg.layers + 0.5)  -- blocks 0..b-1 are "shallow"
local plans = {
  full          = function(l) return true end,
  train_shallow = function(l) return l < b end,
  train_deep    = function(l) return l >= b end,
}

local results = {}
for name, trains in exp.sorted(plans) do
  results[name] = lt.run.child(name, function()
    local w, trainable = {}, 0
    for l = 1, cfg.layers do
      w[l] = init[l]:clone():requires_grad_(trains(l - 1))
      if trains(l - 1) then trainable = trainable + w[l]:numel() end
    end
    lt.run.param("trainable_params", trainable)
    local loss
    for step = 0, cfg.steps - 1 do
      loss = ((forward(w, x) - y) ^ 2):mean()
      loss:backward()
      lt.no_grad(function()
        for l = 1, cfg.layers do
          if w[l].grad then w[l]:sub_(w[l].grad * cfg.lr); w[l]:zero_grad() end
        end
      end)
      lt.run.log("loss", loss, { step = step })
    end
    local change = {}
    for l = 1, cfg.layers do change[l] = (w[l]:detach() - init[l]):norm() end
    lt.run.log_layers("weight_change", change)
    return { trainable = trainable, loss = loss:item() }
  end)
end

print(("%-14s %10s %12s"):format("plan", "trainable", "final loss"))
for name, r in exp.sorted(results) do
  print(("%-14s %10d %12.5f"):format(name, r.trainable, r.loss))
end

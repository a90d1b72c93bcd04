-- experiments/bench/model.lua: the model a bench measures: the --model folder when given, else
-- a temporary random Qwen3 of the bench's own shape (cfg.layers, hidden, heads, kv_heads; vocab
-- `vocab`, default 2048), loaded in --dtype when the bench declares one. Prints the model, and
-- returns it with its folder and the function that removes a temporary one.
--   local m, path, cleanup = require "experiments.bench.model"(cfg)
local exp = require "lt.study"

return function(cfg, vocab)
  local path, cleanup = cfg.model, function() end
  if path == "" then
    path, cleanup = exp.temp_model{ layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
                                    kv_heads = cfg.kv_heads, vocab = vocab or 2048, seed = 1 }
  end
  local m = lt.model.load(path, { dtype = (cfg.dtype or "") ~= "" and cfg.dtype or nil })
  print(tostring(m))
  return m, path, cleanup
end

-- experiments/pretrain_math/pretrain_math.lua: pre-trains a tiny Qwen3 on seeded arithmetic word
-- problems to a middling accuracy, with train.jsonl / test.jsonl prompt sets beside it (the recipe
-- and its corpus: lib/lt/models/tiny_math.lua). lt.models.get("tiny-math") runs the same recipe
-- with its defaults and the fixed seed 1: the RL studies' embedded default policy. This study runs
-- it with other sizes or problem ranges, seeded by the run:
--   ltrun experiments/pretrain_math/ --out=models/math8 --layers=8 --steps=600 --slip=0.2
local study = require "lt.study"
local recipe = require "lt.models.tiny_math"

return study.study{
  name = "pretrain_math",
  help = "pre-train a tiny model on arithmetic word problems (the RL policy)",
  args = recipe.args, run = recipe.make }

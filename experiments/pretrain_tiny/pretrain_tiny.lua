-- experiments/pretrain_tiny/pretrain_tiny.lua: pre-trains a tiny model with its own BPE tokenizer
-- on Debian's English fortunes, WordNet glosses and antonym statements (the corpus and what the
-- model is asked later are described in lib/lt/models/tiny_lm.lua). lt.models.get("tiny-qwen3")
-- runs the same recipe with its defaults and the fixed seed 1: the studies' embedded default base.
-- This study runs it with other sizes or architectures, seeded by the run:
--   ltrun experiments/pretrain_tiny/ --out=models/mine --layers=12 --steps=2000
--   ltrun experiments/pretrain_tiny/ --arch=nemotron_h --pattern=M*M- --chunk=16
local study = require "lt.study"
local recipe = require "lt.models.tiny_lm"

return study.study{
  name = "pretrain_tiny",
  help = "pre-train a tiny model on Debian's English text and antonym facts",
  args = recipe.args, run = recipe.make }

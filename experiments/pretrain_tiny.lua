-- experiments/pretrain_tiny.lua: makes the default base model of the studies: a tiny Qwen3
-- with its own byte-level BPE tokenizer, pre-trained on CPU in a few minutes on real English
-- text from Debian packages (fortunes, WordNet glosses), saved to ./models/tiny-qwen3.
-- Other studies (freeze_deep.lua) call it when that folder is missing.
--   ltrun experiments/pretrain_tiny.lua [--steps=300] [--out=models/tiny-qwen3]
local exp = require "lt.experiment"
-- run as a script, the varargs are the command line (exp.args reads `arg`); called from
-- another study (loadfile(...)(argv)), they are one table of --key=value strings
local argv = type((...)) == "table" and (...) or nil
local cfg = exp.args({ out = "models/tiny-qwen3", layers = 4, hidden = 128, heads = 4, kv_heads = 2,
                       vocab = 2048, steps = 800, lr = 3e-3, warmup = 0.05, seq_len = 64,
                       micro_batch = 16, max_docs = 60000, eval_every = 200, seed = 1 }, argv)
-- a fixed seed (not the run's fresh one): the embedded default base model is the same
-- model wherever it is made

local work = cfg.out .. ".work"
lt.fs.remove(work)  -- lt.fs: no shell; refuses a folder that ltrun did not make
lt.fs.mkdir(work)

-- English documents in the fortune format ("%" lines between documents)
local docs = {}
local fortunes = "/usr/share/games/fortunes"
local not_english = { chinese = true, song100 = true, tang300 = true }
for _, name in ipairs(lt.fs.is_dir(fortunes) and lt.fs.list(fortunes) or {}) do
  if not name:find("%.") and not not_english[name] then
    local f = io.open(fortunes .. "/" .. name)
    if f then
      local text = f:read("*a"):gsub("\27%[[%d;]*m", "")  -- ANSI colour codes
      f:close()
      for doc in (text .. "\n%\n"):gmatch("(.-)\n%%\n") do
        if doc:find("%S") then docs[#docs + 1] = doc end
      end
    end
  end
end
local n_fortunes = #docs
for _, part in ipairs{ "noun", "verb", "adj", "adv" } do
  local f = io.open("/usr/share/wordnet/data." .. part)
  if f then
    for line in f:lines() do
      local gloss = line:sub(1, 2) ~= "  " and line:match("| (.+)$")
      if gloss and #docs < cfg.max_docs then docs[#docs + 1] = gloss:gsub("%s+$", "") end
    end
    f:close()
  end
end
assert(#docs > 100, "no English text found: install the fortunes and wordnet-base packages")
lt.run.param{ fortune_docs = n_fortunes, wordnet_docs = #docs - n_fortunes }

-- a deterministic interleaving, so fortunes and glosses are both in the tokenizer's sample
local order = {}
for i = 1, #docs do order[i] = i end
local x = 12345
for i = #order, 2, -1 do
  x = (x * 1103515245 + 12345) % 2147483648
  local j = x % i + 1
  order[i], order[j] = order[j], order[i]
end
local all = assert(io.open(work .. "/english.txt", "w"))
local sample = assert(io.open(work .. "/tokenizer_sample.txt", "w"))
local sampled = 0
for _, i in ipairs(order) do
  local d = docs[i]:gsub("\n%%\n", "\n")
  all:write(d, "\n%\n")
  if sampled < 1500000 then sample:write(d, "\n%\n"); sampled = sampled + #d end
end
all:close(); sample:close()

-- the random model + a tokenizer trained on the sample
local init = work .. "/init"
lt.model.new{ out = init, arch = "qwen3", layers = cfg.layers, hidden = cfg.hidden, heads = cfg.heads,
              kv_heads = cfg.kv_heads, vocab = cfg.vocab, corpus = { work .. "/tokenizer_sample.txt" },
              seed = cfg.seed }
local packed = lt.data.pack{ tokenizer = init, inputs = { work .. "/english.txt" }, out = work .. "/packed",
                             val = 0.01, seed = 1 }
lt.run.param{ train_tokens = packed.train_tokens, val_tokens = packed.val_tokens }

local m = lt.model.load(init):train_only("all")
local r = lt.train.causal_lm(m, { data = work .. "/packed", steps = cfg.steps, lr = cfg.lr,
                                  warmup = cfg.warmup, decay = "cosine", weight_decay = 0.01,
                                  betas = { 0.9, 0.95 }, micro_batch = cfg.micro_batch,
                                  seq_len = cfg.seq_len, clip = 1.0, eval_every = cfg.eval_every,
                                  seed = cfg.seed })
lt.fs.remove(cfg.out)  -- refused when --out names a folder that ltrun did not make
lt.fs.mkdir(cfg.out)   -- marked as ltrun's, so that a later run may replace it
m:save(cfg.out)
lt.run.artifact(cfg.out .. "/model.safetensors", { kind = "model" })
lt.fs.remove(work)
print(("pretrain_tiny: %s: %d params, %d steps, %.0f tokens/s, %.1fs, val loss %.3f"):format(
  cfg.out, m:n_params(), r.steps, r.tokens_per_s, r.wall_s, r.val_loss or -1))
return r

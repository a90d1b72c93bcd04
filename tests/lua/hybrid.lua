-- tests/lua/hybrid.lua: lt.model.hybrid from Lua (both layer-list forms, the result table,
-- the tokenizer files, refusals naming both donors), and everything else on a hybrid without
-- code of its own: freeze specs and the causal-LM trainer (frozen layers bit-identical, loss
-- falls), LayerTracer (lt.diag.trace), generation (greedy ids = argmax of full passes), GRPO.
local T = require "lt.test"
local tasks = require "lt.tasks"
local data = debug.getinfo(1, "S").source:match("^@(.*)/lua/[^/]*$") .. "/data/diag"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_hybrid"
os.execute("rm -rf '" .. tmp .. "'")
lt.fs.mkdir(tmp)
-- documents of made-up words, varied enough for a few hundred BPE merges
local function write_corpus(path, salt)
  local f = assert(io.open(path, "w"))
  local x = salt
  for _ = 1, 150 do
    local words = {}
    for w = 1, 12 do
      local word = ""
      for _ = 1, 2 + w % 4 do
        x = (x * 1103515245 + 12345) % 2147483648
        word = word .. string.char(97 + math.floor(x / 65536) % 12 + salt % 3)
      end
      words[w] = word
    end
    f:write(table.concat(words, " "), "\n%\n")
  end
  f:close()
end
local corpus = tmp .. "/corpus.txt"
write_corpus(corpus, 1)
local q, nh = tmp .. "/q", tmp .. "/nh"
lt.model.new{ out = q, arch = "qwen3", layers = 4, hidden = 32, heads = 4, kv_heads = 2, vocab = 300,
              corpus = corpus, seed = 5 }
lt.model.new{ out = nh, arch = "nemotron_h", pattern = "M*-M", hidden = 32, heads = 4, kv_heads = 2,
              tokenizer = q .. "/tokenizer.json", seed = 6 }

T.case("assembly from tables and from the compact string", function()
  local r = lt.model.hybrid{ out = tmp .. "/h1", embed = nh, head = q,
                             layers = { { from = nh, layer = 0 }, { from = nh, layer = 1 },
                                        { from = q, layer = 2 }, { from = q, layer = 3 } } }
  T.eq(r.arch, "ltrun_hybrid"); T.eq(r.n_layers, 4)
  T.same_table(r.layer_types, { "mamba", "attention", "decoder", "decoder" })
  T.eq(#r.fresh, 0)
  local donor = lt.model.load(q)
  local h = lt.model.load(r.dir)
  T.ok(h.tokenizer, "the embedding donor's tokenizer came along")
  T.ok(h:parameters()["model.layers.3.mlp.up_proj.weight"]:equal(donor:parameters()["model.layers.3.mlp.up_proj.weight"]),
       "layer 3 is q's layer 3")
  local n = 0
  for _, c in ipairs(r.copied) do
    n = n + 1
    if c.name == "model.embed_tokens.weight" then T.eq(c.donor, nh); T.eq(c.donor_name, "backbone.embeddings.weight") end
  end
  T.eq(n, #r.copied)
  local s = lt.model.hybrid{ out = tmp .. "/h2", embed = q, layers = q .. ":0-1,mlp@" .. nh .. "," .. nh .. ":3", seed = 2 }
  T.same_table(s.layer_types, { "decoder", "decoder", "mlp", "mamba" })
  T.same_table(s.fresh, { 2 })
  local n_before = lt.model.load(s.dir):n_params()
  T.eq(n_before, s.parameters)
end)

T.case("refusals name the donors", function()
  lt.model.new{ out = tmp .. "/other", arch = "qwen3", layers = 2, hidden = 32, heads = 4, kv_heads = 2,
                vocab = 320, corpus = corpus, seed = 5 }
  T.raises(function() lt.model.hybrid{ out = tmp .. "/bad1", embed = q, layers = { { from = tmp .. "/other", layer = 0 } } } end,
           "other %(vocab_size 320%)")
  -- same size, other tokens: a tokenizer trained on other text
  write_corpus(tmp .. "/corpus2.txt", 5)
  T.eq(lt.model.info(tmp .. "/other").n_layers, 2)
  lt.model.new{ out = tmp .. "/other2", arch = "qwen3", layers = 2, hidden = 32, heads = 4, kv_heads = 2,
                vocab = 300, corpus = tmp .. "/corpus2.txt", seed = 5 }
  T.raises(function() lt.model.hybrid{ out = tmp .. "/bad2", embed = q, head = tmp .. "/other2", layers = { { from = q, layer = 0 } } } end,
           "different vocabularies %(token")
  T.raises(function() lt.model.hybrid{ out = tmp .. "/bad3", embed = q, layers = { { from = q } } } end,
           "give both from and layer")
  T.raises(function() lt.model.hybrid{ out = tmp .. "/bad4", embed = q, layers = { { kind = "mamba", init = "zeros" } } } end,
           "the only init is \"hf\"")
end)

local h = lt.model.load(tmp .. "/h1")

T.case("freeze specs and the causal-LM trainer on a hybrid", function()
  local packed = tmp .. "/packed"
  lt.data.pack{ tokenizer = tmp .. "/h1", inputs = { corpus }, out = packed, val = 0.1, seed = 3, progress = false }
  local m = h:clone():freeze(lt.layers.deep(h, 0.5))
  T.eq(m:parts()["model.layers.0.mixer.in_proj.weight"], "mixer")
  T.eq(m:parts()["model.layers.1.mixer.q_proj.weight"], "mixer")
  local trainable = 0
  for name, t in pairs(m:parameters()) do
    local l = tonumber(name:match("^model%.layers%.(%d+)%."))
    if not l or l < 2 then trainable = trainable + t:numel() end
  end
  T.eq(m:n_trainable(), trainable)
  local before = {}
  for name, t in pairs(m:parameters()) do before[name] = t:clone() end
  local r = lt.train.causal_lm(m, { data = packed, seq_len = 16, steps = 10, lr = 3e-3, micro_batch = 4, seed = 1,
                                    progress = false })
  -- seeded data order: the loss falls by ~0.5 (5.70 -> 5.2 on every BLAS kernel tried), where
  -- rounding moves a loss by ~1e-6: a tenth of the fall is far outside both
  T.ok(r.losses[10] < r.losses[1] - 0.05, ("loss falls: %g -> %g"):format(r.losses[1], r.losses[10]))
  T.eq(r.lowest_trainable_layer, -1)  -- the embeddings train
  for name, t in pairs(m:parameters()) do
    local l = tonumber(name:match("^model%.layers%.(%d+)%."))
    if l and l >= 2 then T.ok(t:equal(before[name]), "frozen: " .. name)
    elseif name == "model.layers.0.mixer.in_proj.weight" then T.ok(not t:equal(before[name]), "trained: " .. name) end
  end
end)

T.case("LayerTracer on a hybrid", function()
  local items = tasks.antonym_items(tasks.tsv_pairs(data .. "/antsyn.tsv"), { n = 6, examples = 2 })
  local samples = tasks.build(h.tokenizer, items, { groups = 2 })
  local r = lt.diag.trace(h, samples, { batch = 4 })
  T.eq(r.n_layers, 4)
  T.eq(#r.samples[1].tp_ratio, 4)
  -- P_t at the last residual is the model's own probability of the target
  local s = samples[1]
  local p = h:forward(s.ids, { logits = "last" }).logits[0][-1]:softmax()
  -- the tracer's batch of 4 (padded) and this single pass sum in other orders: p ~ 1/300 here,
  -- off by ~ blocks x width x 2^-24 relative (1e-5 of p, 3e-8); 1e-5 absolute is 300x that
  T.near(r.samples[1].p_target[4], p[r.samples[1].target], 1e-5)
end)

T.case("generation on a hybrid: greedy = argmax of full passes", function()
  local prompt = h.tokenizer:encode("the cat sat")
  local out = h:generate(prompt, { max_new_tokens = 5, stop_ids = {} })
  T.eq(#out, 5)
  -- the decode state (Mamba2 state, KV cache) and a full pass sum in other orders: in fp32
  -- through 4 blocks of width 32, a logit (|logit| < 1 here) moves by ~1e-5 at most
  -- (~ blocks x width x 2^-24 x |logit|, 8e-6); 1e-4 is ten times that bound
  T.greedy(h, prompt, out, 1e-4, "greedy on a hybrid")
end)

T.case("GRPO on a hybrid: the Mamba2 layer alone trains", function()
  -- GRPO centres the rewards per group, so its gradient is zero unless two rows of a group get
  -- different rewards, and then it is a(grad log p(row 1) - grad log p(row 2)): zero again when
  -- the two responses are the same. The reward is therefore 0 for the first response of each
  -- prompt and 1 for a response whose text differs from it: within a group the rewards differ
  -- exactly when the responses do, whatever is sampled. What is sampled depends on the seed and
  -- on the host's rounding; a draw in which every group sampled twice the same response cannot
  -- train anything, so it is redrawn with the next seed (each group is 2 responses of 4 tokens
  -- from a vocabulary of 300 under a random head: two alike is rare, ten draws alike is not seen).
  local items = {}
  for i = 1, 6 do items[i] = { question = ("abc %d"):format(i), answer = tostring(i % 3) } end
  local q = h:parameters()
  for seed = 3, 12 do
    local first, differ = {}, false
    local m = lt.model.load(tmp .. "/h1"):train_only(lt.layers.range(0, 0))
    local r = lt.rl.grpo(m, { data = items, template = "Q: {question}\nA:", prompts = 2, group_size = 2,
                              max_response = 4, iterations = 1, micro_batch = 4, lr = 1e-3, seed = seed,
                              progress = false, rewards = { other = { weight = 1, fn = function(item, response)
                                if first[item.question] == nil then first[item.question] = response; return 0 end
                                if response ~= first[item.question] then differ = true; return 1 end
                                return 0 end } } })
    T.eq(r.steps, 1)
    local p = m:parameters()
    T.ok(p["model.layers.1.mixer.q_proj.weight"]:equal(q["model.layers.1.mixer.q_proj.weight"]), "layer 1 frozen")
    if differ then
      T.ok(not p["model.layers.0.mixer.in_proj.weight"]:equal(q["model.layers.0.mixer.in_proj.weight"]), "layer 0 trained")
      return
    end
  end
  error("ten draws in which no group sampled two different responses")
end)

T.finish()

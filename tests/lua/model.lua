-- tests/lua/model.lua: lt.model and lt.tokenizer from Lua on a tiny model made here.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_model"
os.execute("rm -rf '" .. tmp .. "'")
local info = lt.model.new{ out = tmp .. "/m", arch = "qwen3", layers = 3, hidden = 32, heads = 4,
                           kv_heads = 2, vocab = 300, seed = 5 }
local m = lt.model.load(tmp .. "/m")
local tok = m.tokenizer

T.case("new, load, info", function()
  T.eq(info.vocab, 300)
  T.eq(m.n_layers, 3); T.eq(m.arch, "qwen3"); T.eq(m.dtype, "float32"); T.eq(m.device, lt.device)
  T.eq(m.config.hidden_size, 32)
  local i = lt.model.info(tmp .. "/m")
  T.eq(i.n_layers, 3); T.eq(i.parameters, m:n_params())
  T.raises(function() lt.model.load(tmp .. "/nope") end, "nope")
  T.raises(function() lt.model.new{ out = tmp .. "/m" } end, "not empty")
end)

T.case("tokenizer round trip and offsets", function()
  local text = "The quick brown fox, 42 times!"
  local ids = tok:encode(text)
  T.eq(tok:decode(ids), text)
  local ids2, spans = tok:encode_with_offsets(text)
  T.same_table(ids2, ids)
  local joined = {}
  for i, s in ipairs(spans) do joined[i] = text:sub(s[1], s[2]) end
  T.eq(table.concat(joined), text)
  T.eq(tok:id_to_token(tok:token_to_id("<|endoftext|>")), "<|endoftext|>")
  T.ok(tok.vocab_size == 300)
end)

T.case("forward: shapes, capture, lens, logits where asked", function()
  local ids = tok:encode("hello world, hello layers")
  local out = m:forward(ids, { capture = true })
  T.same_table(out.logits.shape, {1, #ids, 300})
  T.ok(out.hidden[0] and out.hidden[3] and not out.hidden[4], "hidden[0..n_layers]")
  -- the same norm and head on the same rows: equal but for a summation order, ~6e-6 of
  -- |logit| < 1 at most (3 blocks x 32 x 2^-24), within 1e-5 + 1e-5 x |logit|
  T.ok(m:lens(out.hidden[3]):allclose(out.logits, 1e-5, 1e-5), "lens of the last residual = logits")
  local last = m:forward(ids, { logits = "last" })
  T.same_table(last.logits.shape, {1, 1, 300})
  -- the head on one row instead of all: another summation order, as above
  T.ok(last.logits[0][0]:allclose(out.logits[0][-1], 1e-5, 1e-6), "last-position logits")
  T.eq(m:forward(ids, { logits = "none" }).logits, nil)
end)

T.case("resume from a layer reproduces the clean pass; interventions change what follows", function()
  local ids = tok:encode("one two three four five")
  local clean = m:forward(ids, { capture = true })
  for l = 0, m.n_layers - 1 do
    local r = m:forward(nil, { from_layer = l, hidden = clean.hidden[l] })
    T.ok(r.logits:equal(clean.logits), "resume at " .. l)
  end
  local z = m:forward(ids, { capture = true, intervene = { [1] = { zero = {0, 1} } } })
  T.ok(z.hidden[1]:equal(clean.hidden[1]), "before the intervention: unchanged")
  T.eq(z.hidden[2][0][0]:abs():sum(), 0)
  local seen = {}
  local f = m:forward(ids, { intervene = { [0] = function(h, layer) seen[#seen + 1] = layer; return h * 0 end } })
  T.same_table(seen, {0})
  T.ok(not f.logits:allclose(clean.logits), "a Lua function changed the residual")
  T.raises(function() m:forward(ids, { intervene = { [0] = function() error("inside") end } }) end, "inside")
  T.raises(function() m:forward(ids, { intervene = { [7] = { zero = {0} } } }) end, "out of range")
end)

T.case("batches with left padding match single prompts", function()
  local a, b = tok:encode("short"), tok:encode("a somewhat longer prompt here")
  local batch = m:forward({a, b}, { logits = "last" })
  local alone = m:forward(a, { logits = "last" })
  -- another summation order: |logit| < 1 moves by 6e-6 at most (3 blocks x 32 x 2^-24)
  T.ok(batch.logits[0]:allclose(alone.logits[0], 1e-4, 1e-5), "padded row = alone")
  T.ok(batch.attention_mask ~= nil, "the mask used is returned")
end)

T.case("generate: strings and ids, deterministic, stop strings", function()
  local s1, d1 = m:generate("Once upon a time", { max_new_tokens = 8 })
  local s2 = m:generate("Once upon a time", { max_new_tokens = 8 })
  T.eq(s1, s2); T.eq(type(s1), "string"); T.ok(#d1[1].ids <= 8)
  local ids = m:generate(tok:encode("Once"), { max_new_tokens = 5, temperature = 0.8, top_k = 20, seed = 3 })
  local ids2 = m:generate(tok:encode("Once"), { max_new_tokens = 5, temperature = 0.8, top_k = 20, seed = 3 })
  T.same_table(ids, ids2)
  local many = m:generate({"a", "bb bb"}, { max_new_tokens = 4 })
  T.eq(#many, 2); T.eq(type(many[1]), "string")
  -- a padded batch sums in another order than a prompt alone, so a near tie of this random
  -- model's logits may go either way on some host's kernels: each row is checked as a greedy
  -- continuation of its own prompt instead. Error estimate: 3 blocks of width 32 in fp32 move a
  -- logit (|logit| < 1 here) by ~ 3 x 32 x 2^-24 = 6e-6 at most; 1e-4 is over ten times that
  local pa, pb = tok:encode("a"), tok:encode("bb bb")
  local rows = m:generate({ pa, pb }, { max_new_tokens = 4 })
  T.greedy(m, pa, rows[1], 1e-4, "row 1 of a batch"); T.greedy(m, pb, rows[2], 1e-4, "row 2 of a batch")
end)

T.case("generate: continuous batching options (max_rows, refill, share_prefill, drop_finished, cache)", function()
  -- rows of several lengths and a repeated prompt, at most 1 or 2 decoding at once, waiting rows
  -- joining a running batch or not, the repeat prefilled apart, finished rows kept: each row
  -- is still a greedy continuation of its own prompt (within fp32's 1e-4, as above)
  local pa, pb, pc = tok:encode("a"), tok:encode("bb bb"), tok:encode("the cat sat on")
  local prompts = { pa, pb, pc, pa }
  for _, o in ipairs{ { max_rows = 1 }, { max_rows = 2, refill = true }, { max_rows = 2, refill = false },
                      { share_prefill = false, drop_finished = false },
                      { max_rows = 2, cache = "static", sync_every = 2 } } do
    local label = ("max_rows %s refill %s share_prefill %s drop_finished %s cache %s"):format(
      tostring(o.max_rows), tostring(o.refill), tostring(o.share_prefill), tostring(o.drop_finished), tostring(o.cache))
    o.max_new_tokens, o.stop_ids = 5, {}
    local rows, _, st = m:generate(prompts, o)
    T.eq(#rows, 4, label)
    -- what the call did (GenerateStats); the static cache's CUDA graphs only on a CUDA device
    T.eq(st.peak_rows, o.max_rows or 4, label .. ": peak rows")
    T.ok(st.decode_steps >= 4 and st.prefills >= 1, label .. ": decode steps and prefills counted")
    T.eq(st.fallbacks, 0, label .. ": no capture failed")
    if o.cache == "static" and tostring(lt.device):match("^cuda") then
      T.ok(st.graphs > 0 and st.replays > 0, label .. ": the steps replayed CUDA graphs")
    else
      T.eq(st.graphs + st.replays, 0, label .. ": no CUDA graphs off CUDA or on the dynamic cache")
    end
    for i, p in ipairs(prompts) do
      T.eq(#rows[i], 5, label .. ": row " .. i .. " runs to max_new_tokens (no stop ids)")
      T.greedy(m, p, rows[i], 1e-4, label .. ": row " .. i)
    end
  end
  T.raises(function() m:generate("a", { max_rows = -1 }) end, "max_rows")
  T.raises(function() m:generate("a", { refil = true }) end, "refil")
  T.raises(function() m:generate("a", { refill = 1 }) end, "refill")
  T.raises(function() m:generate("a", { cache = "static", sync_every = 0 }) end, "sync_every")
end)

T.case("clone, parameters, save/load round trip", function()
  local c = m:clone()
  local p = c:parameters(0)
  T.ok(p["model.layers.0.mlp.up_proj.weight"] ~= nil, "HF names")
  p["model.layers.0.mlp.up_proj.weight"]:fill(0)
  local ids = tok:encode("clone test")
  T.ok(not c:forward(ids).logits:equal(m:forward(ids).logits), "editing the clone's weights changes it")
  T.ok(m:parameters(0)["model.layers.0.mlp.up_proj.weight"]:abs():sum() > 0, "the original is untouched")
  c:save(tmp .. "/c")
  local c2 = lt.model.load(tmp .. "/c")
  T.ok(c2:forward(ids).logits:equal(c:forward(ids).logits), "bit-exact after save/load")
  T.ok(c2.tokenizer ~= nil, "tokenizer saved along")
  T.raises(function() m:parameters(3) end, "out of range")
end)

T.case("a Llama 2 style tokenizer: new model with its BOS, generate, decode", function()
  local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$")
  local spm = root .. "/tests/data/text/spm/llama2/tokenizer.json"
  lt.model.new{ out = tmp .. "/llama2", arch = "llama", layers = 2, hidden = 32, heads = 4,
                kv_heads = 2, tokenizer = spm, seed = 3 }
  local l2 = lt.model.load(tmp .. "/llama2")
  T.eq(l2.config.bos_token_id, 1); T.eq(l2.config.eos_token_id, 2)
  local t2 = l2.tokenizer
  local ids = t2:encode("Hello world")
  T.eq(ids[1], 1, "<s> first")
  T.eq(t2:decode(ids, { skip_special = true }), "Hello world")
  T.eq(t2:decode(t2:encode("你好")), "<s> 你好")  -- byte fallback back to text, as HF decodes
  local out = l2:generate("Hello", { max_new_tokens = 3, stop_ids = {} })
  T.ok(type(out) == "string")
end)

T.case("integer arguments out of range: errors before any conversion wraps them", function()
  local ids = tok:encode("range checks")
  -- 2^40 used to become intervene[-2147483648], 1e12 max_new_tokens -727379968
  T.raises(function() m:forward(ids, { intervene = { [2 ^ 40] = { zero = {0} } } }) end,
           "intervene key %(a layer%): 1099511627776 is out of range %-1%.%.2")
  T.raises(function() m:forward(ids, { intervene = { [0.5] = { zero = {0} } } }) end, "expected an integer")
  T.raises(function() m:generate("x", { max_new_tokens = 1e12 }) end,
           "option max_new_tokens: 1000000000000 is out of range 0%.%.2147483647")
  T.raises(function() m:generate("x", { max_new_tokens = -1 }) end, "out of range")
  T.raises(function() m:forward(ids, { from_layer = 2 ^ 33 }) end, "from_layer: 8589934592 is out of range")
  T.raises(function() m:forward({ 1, 2 ^ 40 }) end, "token ids%[2%]: 1099511627776 is out of range")
  T.raises(function() tok:decode({ 1, 2 ^ 32 + 1 }) end, "out of range")
  T.raises(function() tok:id_to_token(2 ^ 40) end, "out of range")
  T.raises(function() m:generate("x", { stop_ids = { 2 ^ 53 } }) end, "stop_ids%[1%]")
end)

T.case("m:free() / m:to() inside the model's own intervene callback: an error, no use-after-free", function()
  local m2 = lt.model.load(tmp .. "/m")
  local ids = tok:encode("free me while running")
  local want = m2:forward(ids).logits
  T.raises(function()
    m2:forward(ids, { intervene = { [1] = function(h) m2:free(); return h end } })
  end, "inside its own forward pass")
  T.raises(function()
    m2:forward(ids, { intervene = { [0] = function(h) m2:to("cpu", "float64"); return h end } })
  end, "inside its own forward pass")
  -- the refused calls left the model whole; after the pass it frees as usual
  T.ok(m2:forward(ids).logits:equal(want), "the model is intact after the refused free")
  local ok = pcall(function()
    m2:forward(ids, { intervene = { [0] = function(h) pcall(m2.free, m2); return h end } })
  end)
  T.ok(ok, "a callback that catches the refusal finishes its pass")
  m2:free()
  T.raises(function() m2:forward(ids) end, "freed")
end)

T.case("a clone made inside an intervene callback is not itself running", function()
  local m2 = lt.model.load(tmp .. "/m")
  local ids = tok:encode("clone me while running")
  local c
  m2:forward(ids, { intervene = { [0] = function(h) c = m2:clone(); return h end } })
  -- the clone has no pass of its own in progress: it frees and moves
  T.ok(pcall(c.to, c, "cpu"), "the clone moves")
  T.ok(pcall(c.free, c), "the clone frees")
end)

T.finish()

-- tests/lua/model_sites.lua: hook sites inside layers (capture / intervene at mixer_out,
-- resid_mid, mlp_out, resid_post), layer kinds and parameter parts, on a tiny Qwen3 and a
-- tiny Nemotron-H (Mamba2 / attention / MLP layers) made here.
local T = require "lt.test"
local tmp = os.getenv("LTRUN_TEST_TMP") .. "/lua_model_sites"
os.execute("rm -rf '" .. tmp .. "'")
lt.model.new{ out = tmp .. "/q", arch = "qwen3", layers = 3, hidden = 32, heads = 4, kv_heads = 2,
              vocab = 300, seed = 5 }
lt.model.new{ out = tmp .. "/nh", arch = "nemotron_h", pattern = "M*-M", hidden = 32, heads = 4,
              kv_heads = 2, tokenizer = tmp .. "/q/tokenizer.json", seed = 6 }
local q = lt.model.load(tmp .. "/q")
local nh = lt.model.load(tmp .. "/nh")
local ids = q.tokenizer:encode("one two three four five six")
local every = {}  -- every position, for zero interventions
for i = 1, #ids do every[i] = i - 1 end

T.case("decoder block: the sites compose the residual", function()
  local out = q:forward(ids, { capture = true, sites = nil, logits = "none" })
  local s = q:forward(ids, { capture = { "mixer_out", "resid_mid", "mlp_out", "resid_post" } }).sites
  for l = 0, q.n_layers - 1 do
    T.ok(s.resid_mid[l]:equal(out.hidden[l] + s.mixer_out[l]), "resid_mid = input + mixer_out at " .. l)
    T.ok(s.resid_post[l]:equal(s.resid_mid[l] + s.mlp_out[l]), "resid_post = resid_mid + mlp_out at " .. l)
    T.ok(s.resid_post[l]:equal(out.hidden[l + 1]), "resid_post is hidden[l+1] at " .. l)
  end
  T.eq(q:layer(0).kind, "decoder")
  T.same_table(q:layer(1).sites, { "mixer_out", "resid_mid", "mlp_out", "resid_post" })
  T.eq(q:parts()["model.layers.0.self_attn.q_proj.weight"], "mixer")
  T.eq(q:parts(2)["model.layers.2.post_attention_layernorm.weight"], "norm")
end)

T.case("interventions at sites change what follows them only", function()
  local clean = q:forward(ids, { capture = { "mixer_out", "resid_mid", "mlp_out" } })
  -- zeroing block 1's MLP output leaves its residual at resid_mid
  local z = q:forward(ids, { capture = true, intervene = { mlp_out = { [1] = { zero = every } } } })
  T.ok(z.hidden[2]:equal(clean.sites.resid_mid[1]), "resid_post = resid_mid when mlp_out is zero")
  T.ok(z.hidden[1]:equal(q:forward(ids, { capture = true }).hidden[1]), "earlier layers untouched")
  -- adding to mixer_out of block 0 shifts resid_mid by exactly that
  local delta = (lt.ones(1, #ids, 32) * 0.5):to(q.device)  -- the model's device (cuda on a GPU node)
  local a = q:forward(ids, { capture = { "resid_mid" }, intervene = { mixer_out = { [0] = { add = delta } } } })
  local h0 = q:forward(ids, { capture = true }).hidden[0]
  -- the same fp32 additions in another order: a rounding or two of |h| ~ 1 (6e-8 each)
  T.ok(a.sites.resid_mid[0]:allclose(h0 + clean.sites.mixer_out[0] + delta, 1e-6, 1e-6), "added at mixer_out")
  -- a callback sees the site's tensor and its layer
  local seen
  q:forward(ids, { intervene = { resid_mid = { [2] = function(h, layer) seen = layer; return h end } } })
  T.eq(seen, 2)
  -- numeric keys keep meaning resid_post (after the block)
  local old = q:forward(ids, { capture = true, intervene = { [0] = { zero = { 0 } } } })
  local new = q:forward(ids, { capture = true, intervene = { resid_post = { [0] = { zero = { 0 } } } } })
  T.ok(old.logits:equal(new.logits), "intervene[l] = intervene.resid_post[l]")
  T.raises(function() q:forward(ids, { capture = "mlp_outt" }) end, "unknown hook site \"mlp_outt\"")
  T.raises(function() q:forward(ids, { intervene = { mlp_out = { [-1] = { zero = { 0 } } } } }) end, "out of range")
end)

T.case("nemotron_h: layer kinds, sites, parts, generation", function()
  T.eq(nh.arch, "nemotron_h"); T.eq(nh.n_layers, 4)
  T.eq(nh:layer(0).kind, "mamba"); T.eq(nh:layer(1).kind, "attention"); T.eq(nh:layer(2).kind, "mlp")
  T.same_table(nh:layer(2).sites, { "mlp_out", "resid_post" })
  local parts = nh:parts()
  T.eq(parts["backbone.layers.0.mixer.A_log"], "mixer")
  T.eq(parts["backbone.layers.2.mixer.up_proj.weight"], "mlp")
  T.eq(parts["backbone.embeddings.weight"], "embeddings")
  local out = nh:forward(ids, { capture = true })
  local s = nh:forward(ids, { capture = { "mixer_out", "mlp_out" } }).sites
  T.ok(out.hidden[1]:equal(out.hidden[0] + s.mixer_out[0]), "mamba layer: input + mixer_out")
  T.ok(out.hidden[3]:equal(out.hidden[2] + s.mlp_out[2]), "mlp layer: input + mlp_out")
  T.eq(s.mlp_out[0], nil)
  T.raises(function() nh:forward(ids, { intervene = { mlp_out = { [0] = { zero = { 0 } } } } }) end,
           "a mamba layer has no mlp_out")
  -- greedy decoding through the decode state picks the full pass's argmax at every step, up
  -- to rounding: the decode state and a full pass sum in other orders, which in fp32 through
  -- 4 layers of width 32 moves a logit (|logit| < 1 here) by ~ 4 x 32 x 2^-24 = 8e-6 at most,
  -- so a near tie may go either way on some host's kernels; 1e-4 is over ten times the bound
  local gen = nh:generate(ids, { max_new_tokens = 5 })
  T.ok(#gen >= 1, "tokens generated")
  T.greedy(nh, ids, gen, 1e-4, "greedy on nemotron_h")
  -- freeze specs select by part: "attention" is the token mixer of every kind
  nh:train_only({ layers = { 0 }, part = "attention" })
  T.eq(nh:n_trainable(), 0 + (function()
    local n = 0
    for name, t in pairs(nh:parameters(0)) do if parts[name] == "mixer" then n = n + t:numel() end end
    return n
  end)())
end)

T.finish()

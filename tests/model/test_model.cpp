// tests/model/test_model.cpp: the layer-addressable forward pass: against a decoder written
// out independently from the HF modeling code, and its capture / resume / intervene /
// logits / cache / padding options against each other.
#include <cmath>
#include <map>
#include <ATen/core/grad_mode.h>

#include "model_test_util.h"
#include "runtime/model/model.h"

using namespace ltrun::model;
using model_test::rel_err;

namespace {

// Logits [T, vocab] of one sequence, from HF's Qwen3/Qwen2/Llama code transcribed with
// per-head loops in double; shares nothing with runtime/model but the parameter names.
at::Tensor reference_logits(const Model& m, const at::Tensor& ids) {
  const Config& c = m.config();
  std::map<std::string, at::Tensor> P;
  for (const Param& p : m.parameters()) P[p.name] = p.tensor.detach().to(at::kDouble);
  auto norm = [&](const at::Tensor& x, const std::string& w) {
    return x / at::sqrt(x.pow(2).mean(-1, true) + c.rms_norm_eps) * P.at(w);
  };
  auto linear = [&](const at::Tensor& x, const std::string& name) {
    at::Tensor y = x.matmul(P.at(name + ".weight").t());
    return P.count(name + ".bias") ? y + P.at(name + ".bias") : y;
  };
  auto rope = [&](at::Tensor x) {  // x [T, head_dim]: pairs (i, i + d/2) turn by t * theta^(-2i/d)
    const int64_t d = x.size(1);
    at::Tensor out = x.clone();
    for (int64_t t = 0; t < x.size(0); ++t)
      for (int64_t i = 0; i < d / 2; ++i) {
        const double a = t * std::pow(c.rope_theta, -2.0 * i / d);
        const double x1 = x[t][i].item<double>(), x2 = x[t][i + d / 2].item<double>();
        out[t][i] = x1 * std::cos(a) - x2 * std::sin(a);
        out[t][i + d / 2] = x2 * std::cos(a) + x1 * std::sin(a);
      }
    return out;
  };
  const int64_t T = ids.size(0), hd = c.head_dim, rep = c.n_heads / c.n_kv_heads;
  at::Tensor h = P.at("model.embed_tokens.weight").index_select(0, ids);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const at::Tensor x = norm(h, p + "input_layernorm.weight");
    const at::Tensor q = linear(x, p + "self_attn.q_proj"), k = linear(x, p + "self_attn.k_proj"),
                     v = linear(x, p + "self_attn.v_proj");
    at::Tensor heads = at::zeros({T, c.n_heads * hd}, at::kDouble);
    for (int64_t hh = 0; hh < c.n_heads; ++hh) {
      const int64_t g = hh / rep;
      at::Tensor qh = q.narrow(1, hh * hd, hd), kh = k.narrow(1, g * hd, hd);
      if (c.qk_norm) {
        qh = norm(qh, p + "self_attn.q_norm.weight");
        kh = norm(kh, p + "self_attn.k_norm.weight");
      }
      at::Tensor scores = rope(qh).matmul(rope(kh).t()) / std::sqrt(double(hd));
      scores = scores.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY);
      heads.narrow(1, hh * hd, hd).copy_(at::softmax(scores, -1).matmul(v.narrow(1, g * hd, hd)));
    }
    h = h + linear(heads, p + "self_attn.o_proj");
    const at::Tensor y = norm(h, p + "post_attention_layernorm.weight");
    const at::Tensor gate = linear(y, p + "mlp.gate_proj");
    h = h + linear(gate / (1 + at::exp(-gate)) * linear(y, p + "mlp.up_proj"), p + "mlp.down_proj");
  }
  const at::Tensor head =
      c.tie_word_embeddings ? P.at("model.embed_tokens.weight") : P.at("lm_head.weight");
  return norm(h, "model.norm.weight").matmul(head.t());
}

TinySpec variant(const std::string& name) {
  if (name == "llama tied, biased") {
    TinySpec s = model_test::spec("llama");
    s.tie_word_embeddings = true;
    s.attention_bias = true;
    return s;
  }
  if (name == "qwen3 mha, head_dim 12") {
    TinySpec s = model_test::spec("qwen3");
    s.kv_heads = 4;
    s.head_dim = 12;
    return s;
  }
  return model_test::spec(name);
}

const char* kVariants[] = {"qwen3", "qwen2", "llama", "llama tied, biased",
                           "qwen3 mha, head_dim 12"};

}  // namespace

TEST_CASE("forward matches the HF computation written out", "[model][forward]") {
  for (const char* name : kVariants) {
    DYNAMIC_SECTION(name) {
      TinySpec s = variant(name);
      const Model m = model_test::sharp_tiny(s);
      if (s.attention_bias || s.arch == "qwen2") {  // make the (zero-initialised) biases matter
        at::NoGradGuard no_grad;
        for (const Param& p : m.parameters())
          if (p.name.find(".bias") != std::string::npos) p.tensor.normal_(0, 0.5);
      }
      const at::Tensor ids = model_test::random_ids(1, 9, s.vocab, 11);
      const at::Tensor logits = m.forward(ids).logits;
      REQUIRE(logits.sizes() == at::IntArrayRef({1, 9, s.vocab}));
      const at::Tensor ref = reference_logits(m, ids[0]);
      // fp32 in another summation order: see rel_err's error budget (model_test_util.h); 2e-5
      // for the variants with biases of std 0.5
      CHECK(rel_err(logits[0], ref) < 2e-5);
      CHECK(ref.std().item<double>() > 0.1);  // the check is not trivially met by flat logits
    }
  }
}

TEST_CASE("captured hidden states follow the documented convention", "[model][forward]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const at::Tensor ids = model_test::random_ids(2, 6, 61, 3);
  ForwardOptions o;
  o.capture = true;
  const ForwardResult r = m.forward(ids, o);
  REQUIRE(r.hidden.size() == size_t(m.n_layers() + 1));
  const at::Tensor embed = m.parameters().front().tensor;
  CHECK(at::equal(r.hidden[0], embed.index_select(0, ids.flatten()).view({2, 6, -1})));
  CHECK(at::equal(r.residual, r.hidden.back()));
  CHECK(at::equal(m.lens(r.hidden.back()), r.logits));  // last entry is before the final norm
  // each block adds to the residual: consecutive entries differ
  for (int l = 0; l < m.n_layers(); ++l) CHECK(!at::allclose(r.hidden[l], r.hidden[l + 1]));
}

TEST_CASE("logits only where asked", "[model][forward]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen2"));
  const at::Tensor ids = model_test::random_ids(2, 6, 61, 4);
  const at::Tensor all = m.forward(ids).logits;
  ForwardOptions o;
  o.logits = Logits::Last;
  // the head on fewer rows may sum its length-32 dot products in another order: ~sqrt(32) x
  // 2^-24 = 3e-7 of |logit| (~10 when sharp), 3e-6, under allclose's 1e-6 + 1e-6 x |logit|
  CHECK(at::allclose(m.forward(ids, o).logits, all.narrow(1, 5, 1), 1e-6, 1e-6));
  o.logits = Logits::Positions;
  o.logit_positions = at::tensor({0, -1, 2}, at::kLong);
  const at::Tensor some = m.forward(ids, o).logits;
  REQUIRE(some.sizes() == at::IntArrayRef({2, 3, 61}));
  // the head on fewer rows may sum its length-32 dot products in another order: ~sqrt(32) x
  // 2^-24 = 3e-7 of |logit| (~10 when sharp), 3e-6, under allclose's 1e-6 + 1e-6 x |logit|
  CHECK(at::allclose(some, all.index_select(1, at::tensor({0, 5, 2}, at::kLong)), 1e-6, 1e-6));
  o.logit_positions = at::tensor({1, 4, 3, 0}, at::kLong).view({2, 2});  // per row
  const at::Tensor rows = m.forward(ids, o).logits;
  CHECK(at::allclose(rows[0][1], all[0][4], 1e-6, 1e-6));
  CHECK(at::allclose(rows[1][0], all[1][3], 1e-6, 1e-6));
  o.logit_positions = at::tensor({6}, at::kLong);
  model_test::require_error([&] { m.forward(ids, o); }, {"logit_positions out of range"});
  o.logits = Logits::None;
  CHECK(!m.forward(ids, o).logits.defined());
}

TEST_CASE("a left-padded batch row equals the same prompt alone", "[model][forward][padding]") {
  for (const char* arch : {"qwen3", "qwen2", "llama"}) {
    DYNAMIC_SECTION(arch) {
      const Model m = model_test::sharp_tiny(model_test::spec(arch));
      const std::vector<int64_t> lens = {7, 4, 1};
      const at::Tensor ids = model_test::random_ids(3, 7, 61, 5);
      at::Tensor mask = at::zeros({3, 7}, at::kLong);
      for (int b = 0; b < 3; ++b) mask[b].narrow(0, 7 - lens[b], lens[b]).fill_(1);
      ForwardOptions o;
      o.attention_mask = mask;
      const at::Tensor batch = m.forward(ids, o).logits;
      CHECK(batch.isfinite().all().item<bool>());
      for (int b = 0; b < 3; ++b) {
        const at::Tensor alone =
            m.forward(ids[b].narrow(0, 7 - lens[b], lens[b]).unsqueeze(0)).logits[0];
        // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
        CHECK(rel_err(batch[b].narrow(0, 7 - lens[b], lens[b]), alone) < 1e-5);
      }
    }
  }
}

TEST_CASE("incremental decoding with the KV cache equals recomputing", "[model][forward][cache]") {
  for (const char* arch : {"qwen3", "llama"}) {
    DYNAMIC_SECTION(arch) {
      const Model m = model_test::sharp_tiny(model_test::spec(arch));
      const at::Tensor ids = model_test::random_ids(2, 9, 61, 6);
      at::Tensor mask = at::ones({2, 9}, at::kLong);
      mask[1].narrow(0, 0, 3).zero_();  // row 1 is left-padded
      ForwardOptions full;
      full.attention_mask = mask;
      const at::Tensor expect = m.forward(ids, full).logits;

      at::NoGradGuard no_grad;
      DecodeState cache;  // prefill 4, then 1, 1, a chunk of 3 (growing past the first capacity)
      std::vector<at::Tensor> got;
      int64_t at_pos = 0;
      for (int64_t n : {4, 1, 1, 3}) {
        ForwardOptions o;
        o.state = &cache;
        o.attention_mask = mask.narrow(1, 0, at_pos + n);
        got.push_back(m.forward(ids.narrow(1, at_pos, n), o).logits);
        at_pos += n;
        CHECK(cache.length() == at_pos);
      }
      // padding positions see no key and carry garbage by design: compare tokens only
      const at::Tensor real = mask.unsqueeze(-1).to(at::kFloat);
      CHECK(rel_err(at::cat(got, 1) * real, expect * real) < 1e-5);

      DecodeState plain;  // no mask: positions continue from the cache length
      const at::Tensor expect_plain = m.forward(ids).logits;
      ForwardOptions o;
      o.state = &plain;
      const at::Tensor first = m.forward(ids.narrow(1, 0, 5), o).logits;
      const at::Tensor rest = m.forward(ids.narrow(1, 5, 4), o).logits;
      // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
      CHECK(rel_err(at::cat({first, rest}, 1), expect_plain) < 1e-5);
    }
  }
}

TEST_CASE("resuming from hidden[l] reproduces the clean pass exactly", "[model][forward][resume]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const at::Tensor ids = model_test::random_ids(2, 6, 61, 8);
  ForwardOptions o;
  o.capture = true;
  o.attention_mask = at::ones({2, 6}, at::kLong);
  o.attention_mask[0][0] = 0;
  const ForwardResult clean = m.forward(ids, o);
  for (int l = 0; l <= m.n_layers(); ++l) {
    ForwardOptions r = o;
    r.from_layer = l;
    r.hidden = clean.hidden[l];
    const ForwardResult resumed = m.forward({}, r);
    CHECK(at::equal(resumed.logits, clean.logits));
    for (int j = l; j <= m.n_layers(); ++j) CHECK(at::equal(resumed.hidden[j], clean.hidden[j]));
    for (int j = 0; j < l; ++j) CHECK(!resumed.hidden[j].defined());
  }
  // to_layer stops early, without the head
  ForwardOptions part = o;
  part.to_layer = 1;
  const ForwardResult stopped = m.forward(ids, part);
  CHECK(!stopped.logits.defined());
  CHECK(stopped.hidden.size() == 3);
  CHECK(at::equal(stopped.residual, clean.hidden[2]));
  ForwardOptions bad;
  bad.from_layer = 2;
  model_test::require_error([&] { m.forward(ids, bad); }, {"from layer 2", "needs `hidden`"});
}

TEST_CASE("interventions change the residual from their layer on only",
          "[model][forward][intervene]") {
  const Model m = model_test::sharp_tiny(model_test::spec("qwen2"));
  const at::Tensor ids = model_test::random_ids(1, 6, 61, 9);
  ForwardOptions o;
  o.capture = true;
  const ForwardResult clean = m.forward(ids, o);

  SECTION("zeroing positions after block 1") {
    ForwardOptions z = o;
    z.intervene[1] = Intervention::zero(at::tensor({3, 4}, at::kLong));
    const ForwardResult r = m.forward(ids, z);
    for (int j = 0; j <= 1; ++j)
      CHECK(at::equal(r.hidden[j], clean.hidden[j]));  // before: untouched
    CHECK(at::equal(r.hidden[2].narrow(1, 3, 2), at::zeros({1, 2, 32})));
    CHECK(at::equal(r.hidden[2].narrow(1, 0, 3), clean.hidden[2].narrow(1, 0, 3)));
    CHECK(at::equal(r.hidden[2].narrow(1, 5, 1), clean.hidden[2].narrow(1, 5, 1)));
    // causal: earlier positions never see the change, later ones do
    CHECK(at::equal(r.logits.narrow(1, 0, 3), clean.logits.narrow(1, 0, 3)));
    CHECK(!at::allclose(r.logits.narrow(1, 5, 1), clean.logits.narrow(1, 5, 1)));
    // a bool mask names the same positions
    ForwardOptions zb = o;
    zb.intervene[1] = Intervention::zero(at::tensor({0, 0, 0, 1, 1, 0}, at::kLong).to(at::kBool));
    CHECK(at::equal(m.forward(ids, zb).logits, r.logits));
  }
  SECTION("add, replace and a callback") {
    const at::Tensor delta = at::randn({1, 6, 32});
    ForwardOptions a = o;
    a.intervene[0] = Intervention::add(delta);
    const ForwardResult added = m.forward(ids, a);
    // an fp32 addition written twice: allclose's defaults (1e-5, 1e-8) absorb one rounding
    CHECK(at::allclose(added.hidden[1], clean.hidden[1] + delta));
    ForwardOptions f = o;
    std::vector<int> seen;
    f.intervene[0] = Intervention::call([&](int layer, at::Tensor& h) {
      seen.push_back(layer);
      h = h + delta;
    });
    CHECK(at::equal(m.forward(ids, f).logits, added.logits));
    CHECK(seen == std::vector<int>{0});
    ForwardOptions rp = o;
    rp.intervene[2] = Intervention::replace(clean.hidden[3]);
    CHECK(at::equal(m.forward(ids, rp).logits, clean.logits));
    ForwardOptions e = o;  // -1: the embeddings
    e.intervene[-1] = Intervention::zero(at::tensor({0}, at::kLong));
    CHECK(at::equal(m.forward(ids, e).hidden[0][0][0], at::zeros({32})));
  }
  SECTION("errors") {
    ForwardOptions late = o;
    late.to_layer = 1;
    late.intervene[2] = Intervention::add(at::zeros({1}));
    model_test::require_error([&] { m.forward(ids, late); }, {"after layer 2 never applies"});
    ForwardOptions shape = o;
    shape.intervene[0] = Intervention::call([](int, at::Tensor& h) { h = h.narrow(1, 0, 2); });
    model_test::require_error([&] { m.forward(ids, shape); }, {"after layer 0", "callback"});
  }
}

TEST_CASE("forward rejects malformed inputs with context", "[model][forward]") {
  const Model m = make_tiny(model_test::spec("llama"));
  model_test::require_error(
      [&] {
        m.forward(at::tensor({1, 61}, at::kLong).view({1, 2}));
      },
      {"token id 61", "0..60"});
  model_test::require_error([&] { m.forward(at::ones({3}, at::kLong)); },
                            {"input_ids", "[batch, tokens]"});
  ForwardOptions o;
  o.attention_mask = at::ones({1, 3}, at::kLong);
  model_test::require_error(
      [&] {
        m.forward(at::ones({1, 2}, at::kLong), o);
      },
      {"attention_mask", "[1, 2]"});
}

TEST_CASE("clone is deep, to() converts, requires_grad per layer", "[model][params]") {
  Model m = make_tiny(model_test::spec("qwen3"));
  const at::Tensor ids = model_test::random_ids(1, 5, 61, 10);
  m.set_requires_grad(false);
  m.set_requires_grad(1, true);
  for (const Param& p : m.parameters()) CHECK(p.tensor.requires_grad() == (p.layer == 1));

  Model c = m.clone();
  for (const Param& p : c.parameters()) CHECK(p.tensor.requires_grad() == (p.layer == 1));
  {
    at::NoGradGuard no_grad;
    c.parameters(0).front().tensor.add_(1);
  }
  CHECK(!at::equal(c.parameters(0).front().tensor, m.parameters(0).front().tensor));
  CHECK(at::equal(m.clone().forward(ids).logits, m.forward(ids).logits));

  const at::Tensor before = m.forward(ids).logits;
  m.to(c10::kCPU, at::kDouble);
  CHECK(m.dtype() == at::kDouble);
  for (const Param& p : m.parameters()) {
    CHECK(p.tensor.scalar_type() == at::kDouble);
    CHECK(p.tensor.is_leaf());
    CHECK(p.tensor.requires_grad() == (p.layer == 1));
  }
  // fp32 -> double: only the fp32 roundings go, ~2e-6 (rel_err's error budget) < 1e-5
  CHECK(rel_err(m.forward(ids).logits, before) < 1e-5);

  // HF names, per layer, in HF's order
  std::vector<std::string> names;
  for (const Param& p : m.parameters(1)) names.push_back(p.name);
  const std::vector<std::string> expect = {
      "model.layers.1.self_attn.q_proj.weight",        "model.layers.1.self_attn.k_proj.weight",
      "model.layers.1.self_attn.v_proj.weight",        "model.layers.1.self_attn.o_proj.weight",
      "model.layers.1.self_attn.q_norm.weight",        "model.layers.1.self_attn.k_norm.weight",
      "model.layers.1.mlp.gate_proj.weight",           "model.layers.1.mlp.up_proj.weight",
      "model.layers.1.mlp.down_proj.weight",           "model.layers.1.input_layernorm.weight",
      "model.layers.1.post_attention_layernorm.weight"};
  CHECK(names == expect);
  model_test::require_error([&] { m.parameters(3); }, {"layer 3 out of range", "3 layers"});
}

TEST_CASE("init follows HF's initialisation", "[model][params]") {
  TinySpec s = model_test::spec("qwen2");
  s.hidden = 128;
  s.vocab = 500;
  const Model m = make_tiny(s);
  for (const Param& p : m.parameters()) {
    INFO(p.name);
    if (p.name.find("norm") != std::string::npos)
      CHECK(at::equal(p.tensor, at::ones_like(p.tensor)));
    else if (p.name.find(".bias") != std::string::npos)
      CHECK(at::equal(p.tensor, at::zeros_like(p.tensor)));
    else
      // the sample std of n >= 6144 normal draws is off by ~1/sqrt(2n) <= 0.9% relative: 5% is
      // over 5 of those
      CHECK(p.tensor.std().item<double>() == Approx(0.02).epsilon(0.05));
  }
  // the seed decides the weights
  CHECK(at::equal(make_tiny(s).parameters().front().tensor, m.parameters().front().tensor));
  s.seed = 2;
  CHECK(!at::equal(make_tiny(s).parameters().front().tensor, m.parameters().front().tensor));
}

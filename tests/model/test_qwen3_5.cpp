// tests/model/test_qwen3_5.cpp: Qwen3.5's dense text model (Gated DeltaNet and gated
// attention layers): the chunked delta rule against a plain recurrence in double and its
// one-step form; the whole model against a per-token reference written from HF's modeling
// code; decode state against recomputing the sequence; checkpoint and config round trip;
// parts and sites.
#include <ATen/core/grad_mode.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model_test_util.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/arch/gated_deltanet.h"
#include "runtime/model/model.h"

using namespace ltrun::model;
using model_test::rel_err;

namespace {

TinySpec q35_spec(const std::string& pattern = "LLA", uint64_t seed = 1) {
  TinySpec s = model_test::spec("qwen3_5_text", seed);
  s.pattern = pattern;
  s.layers = int64_t(pattern.size());
  return s;
}

// A model with chunks of 4 tokens (several chunks in a few tokens) and sharper weights than
// init's 0.02, so that every path contributes well above rounding; A_log, dt_bias and the
// norms keep their scale but are made unequal.
Model sharp_q35(const TinySpec& s, int64_t chunk = 4) {
  Config c = tiny_config(s);
  c.gdn.chunk = chunk;
  Model m = Model::init(c, s.seed);
  at::NoGradGuard no_grad;
  at::Generator g = at::detail::createCPUGenerator(7);
  for (auto& p : m.parameters()) {
    const auto r = at::rand(p.tensor.sizes(), g, at::kFloat);
    if (p.decay) p.tensor.mul_(p.part == ParamPart::Embeddings ? 40 : 12);
    else p.tensor.add_(r * 0.5 - 0.25);
  }
  return m;
}

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::kFloat);
}

// The delta rule token by token in double, one head at a time:
//   S = exp(g) S;  S = S + k (beta (v - S^T k))^T;  o = S^T q / sqrt(dk)
at::Tensor naive_delta(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& g,
                       const at::Tensor& beta, const at::Tensor& initial, at::Tensor* final_state) {
  const int64_t b = q.size(0), T = q.size(1), h = q.size(2), dk = q.size(3), dv = v.size(3);
  at::Tensor S = initial.defined() ? initial.to(at::kDouble).clone() : at::zeros({b, h, dk, dv}, at::kDouble);
  at::Tensor o = at::zeros({b, T, h, dv}, at::kDouble);
  const at::Tensor qd = q.to(at::kDouble), kd = k.to(at::kDouble), vd = v.to(at::kDouble);
  const at::Tensor gd = g.to(at::kDouble), bd = beta.to(at::kDouble);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t hh = 0; hh < h; ++hh) {
        at::Tensor s = S[bb][hh] * std::exp(gd[bb][t][hh].item<double>());
        const at::Tensor kt = kd[bb][t][hh];
        const at::Tensor delta = (vd[bb][t][hh] - s.t().matmul(kt)) * bd[bb][t][hh].item<double>();
        s = s + kt.unsqueeze(1) * delta.unsqueeze(0);
        S[bb][hh] = s;
        o[bb][t][hh] = s.t().matmul(qd[bb][t][hh]) / std::sqrt(double(dk));
      }
  if (final_state) *final_state = S;
  return o;
}

at::Tensor unit_rows(const at::Tensor& x) { return x / x.norm(2, -1, true); }

}  // namespace

TEST_CASE("the chunked delta rule equals the recurrence and its one-step form", "[model][qwen3_5][gdn]") {
  const int64_t b = 2, h = 3, dk = 4, dv = 5;
  for (int64_t T : {1, 7, 8, 13}) {
    for (int64_t chunk : {1, 4, 16}) {
      DYNAMIC_SECTION("T " << T << ", chunk " << chunk) {
        // unit keys as the model's L2 norm makes them (the recurrence is then a contraction)
        const at::Tensor q = unit_rows(randn({b, T, h, dk}, 1)), k = unit_rows(randn({b, T, h, dk}, 2));
        const at::Tensor v = randn({b, T, h, dv}, 3);
        const at::Tensor g = -at::softplus(randn({b, T, h}, 4)) * 2, beta = at::sigmoid(randn({b, T, h}, 5));
        const at::Tensor S0 = randn({b, h, dk, dv}, 6);
        at::Tensor ref_state, final_state;
        const at::Tensor ref = naive_delta(q, k, v, g, beta, S0, &ref_state);
        const at::Tensor o = gated_delta_chunked(q, k, v, g, beta, chunk, S0, &final_state);
        // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
        CHECK(rel_err(o, ref) < 1e-5);
        CHECK(rel_err(final_state, ref_state) < 1e-5);
        // from zeros (undefined initial state)
        at::Tensor zero_state;
        CHECK(rel_err(gated_delta_chunked(q, k, v, g, beta, chunk, {}, nullptr),
                      naive_delta(q, k, v, g, beta, {}, &zero_state)) < 1e-5);
        // one step at a time
        at::Tensor s = S0.clone();
        std::vector<at::Tensor> steps;
        for (int64_t t = 0; t < T; ++t)
          steps.push_back(gated_delta_step(q.select(1, t), k.select(1, t), v.select(1, t), g.select(1, t),
                                           beta.select(1, t), s));
        // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
        CHECK(rel_err(at::stack(steps, 1), ref) < 1e-5);
        CHECK(rel_err(s, ref_state) < 1e-5);
        // split in two: the second half from the first half's state
        if (T > 2) {
          const int64_t n = T / 2;
          at::Tensor mid, end;
          auto part = [&](const at::Tensor& x, int64_t from, int64_t len) { return x.narrow(1, from, len); };
          const at::Tensor o1 = gated_delta_chunked(part(q, 0, n), part(k, 0, n), part(v, 0, n), part(g, 0, n),
                                                    part(beta, 0, n), chunk, S0, &mid);
          const at::Tensor o2 = gated_delta_chunked(part(q, n, T - n), part(k, n, T - n), part(v, n, T - n),
                                                    part(g, n, T - n), part(beta, n, T - n), chunk, mid, &end);
          // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
          CHECK(rel_err(at::cat({o1, o2}, 1), ref) < 1e-5);
          CHECK(rel_err(end, ref_state) < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("the chunked delta rule keeps fp64 and strong decays", "[model][qwen3_5][gdn]") {
  // decays of e^-20 per token (A up to 16): a chunk's cumulative decay underflows fp32, which
  // the chunked form must survive (its decays are sums within the chunk, never ratios)
  const int64_t b = 1, h = 2, dk = 3, dv = 2, T = 19;
  const at::Tensor q = unit_rows(randn({b, T, h, dk}, 11)).to(at::kDouble),
                   k = unit_rows(randn({b, T, h, dk}, 12)).to(at::kDouble);
  const at::Tensor v = randn({b, T, h, dv}, 13).to(at::kDouble);
  at::Generator gen = at::detail::createCPUGenerator(14);
  const at::Tensor g = -at::rand({b, T, h}, gen, at::kDouble) * 40;
  const at::Tensor beta = at::sigmoid(randn({b, T, h}, 15)).to(at::kDouble);
  at::Tensor ref_state, final_state;
  const at::Tensor ref = naive_delta(q, k, v, g, beta, {}, &ref_state);
  const at::Tensor o = gated_delta_chunked(q, k, v, g, beta, 8, {}, &final_state);
  CHECK(o.scalar_type() == at::kDouble);
  // double: ~1e-15 (rel_err's error budget); 1e-12 is a thousandfold margin
  CHECK(rel_err(o, ref) < 1e-12);
  CHECK(rel_err(final_state, ref_state) < 1e-12);
  const at::Tensor o32 = gated_delta_chunked(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat),
                                             g.to(at::kFloat), beta.to(at::kFloat), 8, {}, nullptr);
  CHECK(!o32.isnan().any().item<bool>());
  // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
  CHECK(rel_err(o32, ref) < 1e-5);
}

namespace {

// Logits [T, vocab] of one sequence from Qwen3_5ForCausalLM's modeling code (torch
// fallbacks) transcribed in double with a per-token delta rule, a per-tap causal conv and
// per-head attention; shares nothing with runtime/model but the parameter names.
at::Tensor reference_logits(const Model& m, const at::Tensor& ids) {
  const Config& c = m.config();
  const GatedDeltaNetConfig& g = c.gdn;
  std::map<std::string, at::Tensor> P;
  for (const Param& p : m.parameters()) P[p.name] = p.tensor.detach().to(at::kDouble);
  const double eps = c.rms_norm_eps;
  auto rms = [&](const at::Tensor& x) { return x / at::sqrt(x.pow(2).mean(-1, true) + eps); };
  auto norm1p = [&](const at::Tensor& x, const std::string& w) { return rms(x) * (1 + P.at(w)); };
  auto silu = [](const at::Tensor& x) { return x / (1 + at::exp(-x)); };
  auto lin = [&](const at::Tensor& x, const std::string& w) { return x.matmul(P.at(w).t()); };
  const int64_t T = ids.size(0);
  at::Tensor h = P.at("model.embed_tokens.weight").index_select(0, ids);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const at::Tensor x = norm1p(h, p + "input_layernorm.weight");
    at::Tensor out;
    if (c.layer_types[size_t(l)] == "full_attention") {
      const int64_t hd = c.head_dim, nh = c.n_heads, rep = c.n_heads / c.n_kv_heads, rd = c.rotary_dim;
      const at::Tensor qg = lin(x, p + "self_attn.q_proj.weight").view({T, nh, 2 * hd});
      const at::Tensor k = lin(x, p + "self_attn.k_proj.weight").view({T, c.n_kv_heads, hd});
      const at::Tensor v = lin(x, p + "self_attn.v_proj.weight").view({T, c.n_kv_heads, hd});
      at::Tensor qn = norm1p(qg.narrow(2, 0, hd), p + "self_attn.q_norm.weight");
      at::Tensor kn = norm1p(k, p + "self_attn.k_norm.weight");
      // RoPE on the first rd dims: pairs (i, i + rd/2) rotate by pos * theta^(-2i/rd)
      auto rope = [&](at::Tensor t) {
        t = t.clone();
        for (int64_t pos = 0; pos < T; ++pos)
          for (int64_t i = 0; i < rd / 2; ++i) {
            const double ang = double(pos) * std::pow(c.rope_theta, -2.0 * double(i) / double(rd));
            const at::Tensor a = t[pos].select(-1, i).clone(), b = t[pos].select(-1, i + rd / 2).clone();
            t[pos].select(-1, i).copy_(a * std::cos(ang) - b * std::sin(ang));
            t[pos].select(-1, i + rd / 2).copy_(b * std::cos(ang) + a * std::sin(ang));
          }
        return t;
      };
      qn = rope(qn);
      kn = rope(kn);
      at::Tensor heads = at::zeros({T, nh * hd}, at::kDouble);
      for (int64_t hh = 0; hh < nh; ++hh) {
        const int64_t kv = hh / rep;
        at::Tensor s = qn.select(1, hh).matmul(kn.select(1, kv).t()) / std::sqrt(double(hd));
        s = s.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY);
        const at::Tensor gate = qg.select(1, hh).narrow(1, hd, hd);
        heads.narrow(1, hh * hd, hd).copy_(at::softmax(s, -1).matmul(v.select(1, kv)) / (1 + at::exp(-gate)));
      }
      out = lin(heads, p + "self_attn.o_proj.weight");
    } else {
      const std::string a = p + "linear_attn.";
      const int64_t K = g.conv_kernel, CD = g.conv_dim(), hk = g.k_heads, hv = g.v_heads,
                    dk = g.k_head_dim, dv = g.v_head_dim;
      const at::Tensor qkv = lin(x, a + "in_proj_qkv.weight"), z = lin(x, a + "in_proj_z.weight");
      const at::Tensor bb = lin(x, a + "in_proj_b.weight"), aa = lin(x, a + "in_proj_a.weight");
      const at::Tensor w = P.at(a + "conv1d.weight");
      at::Tensor conv = at::zeros({T, CD}, at::kDouble);
      for (int64_t t = 0; t < T; ++t) {
        at::Tensor acc = at::zeros({CD}, at::kDouble);
        for (int64_t j = 0; j < K; ++j)  // tap j reads input t - (K - 1 - j)
          if (t - (K - 1 - j) >= 0) acc = acc + w.select(2, j).squeeze(1) * qkv[t - (K - 1 - j)];
        conv[t] = silu(acc);
      }
      at::Tensor S = at::zeros({hv, dk, dv}, at::kDouble), o = at::zeros({T, hv, dv}, at::kDouble);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hh = 0; hh < hv; ++hh) {
          const int64_t kh = hh / (hv / hk);
          auto l2 = [](const at::Tensor& u) { return u / at::sqrt(u.pow(2).sum() + 1e-6); };
          const at::Tensor q = l2(conv[t].narrow(0, kh * dk, dk)), k = l2(conv[t].narrow(0, hk * dk + kh * dk, dk));
          const at::Tensor v = conv[t].narrow(0, 2 * hk * dk + hh * dv, dv);
          const double beta = 1 / (1 + std::exp(-bb[t][hh].item<double>()));
          const double decay = -std::exp(P.at(a + "A_log")[hh].item<double>()) *
                               std::log1p(std::exp(aa[t][hh].item<double>() + P.at(a + "dt_bias")[hh].item<double>()));
          at::Tensor s = S[hh] * std::exp(decay);
          s = s + k.unsqueeze(1) * ((v - s.t().matmul(k)) * beta).unsqueeze(0);
          S[hh] = s;
          o[t][hh] = s.t().matmul(q) / std::sqrt(double(dk));
        }
      const at::Tensor gated = rms(o) * P.at(a + "norm.weight") * silu(z.view({T, hv, dv}));
      out = lin(gated.reshape({T, hv * dv}), a + "out_proj.weight");
    }
    h = h + out;
    const at::Tensor y = norm1p(h, p + "post_attention_layernorm.weight");
    h = h + lin(silu(lin(y, p + "mlp.gate_proj.weight")) * lin(y, p + "mlp.up_proj.weight"), p + "mlp.down_proj.weight");
  }
  return norm1p(h, "model.norm.weight").matmul(P.at("lm_head.weight").t());
}

}  // namespace

TEST_CASE("qwen3_5_text forward matches a per-token reference of HF's code", "[model][qwen3_5]") {
  const Model m = sharp_q35(q35_spec("LLAL"));
  const Config& c = m.config();
  REQUIRE(c.rotary_dim == 2);  // a quarter of head_dim 8: the partial path is exercised
  REQUIRE(c.gdn.v_heads == 2 * c.gdn.k_heads);  // key heads repeated to value heads
  const at::Tensor ids = model_test::random_ids(1, 11, 61, 3);  // 11 tokens: chunks of 4 + a partial
  const at::Tensor ref = reference_logits(m, ids[0]);
  const at::Tensor got = m.forward(ids).logits[0];
  INFO("logit scale " << ref.abs().max().item<double>());
  CHECK(ref.std().item<double>() > 0.5);  // sharp enough that a wrong path shows
  CHECK(rel_err(got, ref) < 1e-4);
}

TEST_CASE("qwen3_5_text decode state equals recomputing the sequence", "[model][qwen3_5][state]") {
  const Model m = sharp_q35(q35_spec("LAL"));
  const at::Tensor ids = model_test::random_ids(2, 10, 61, 6);
  at::NoGradGuard no_grad;
  SECTION("no padding: prefill 4, steps of 1, a chunk of 3, a step") {
    const at::Tensor expect = m.forward(ids).logits;
    DecodeState st;
    std::vector<at::Tensor> got;
    int64_t at_pos = 0;
    for (int64_t n : {4, 1, 1, 3, 1}) {
      ForwardOptions o;
      o.state = &st;
      got.push_back(m.forward(ids.narrow(1, at_pos, n), o).logits);
      at_pos += n;
      CHECK(st.length() == at_pos);
    }
    // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
    CHECK(rel_err(at::cat(got, 1), expect) < 1e-5);
  }
  SECTION("left padding, then steps") {
    at::Tensor mask = at::ones({2, 10}, at::kLong);
    mask[1].narrow(0, 0, 3).zero_();
    ForwardOptions full;
    full.attention_mask = mask;
    const at::Tensor expect = m.forward(ids, full).logits;
    DecodeState st;
    std::vector<at::Tensor> got;
    int64_t at_pos = 0;
    for (int64_t n : {6, 1, 1, 1, 1}) {
      ForwardOptions o;
      o.state = &st;
      o.attention_mask = mask.narrow(1, 0, at_pos + n);
      got.push_back(m.forward(ids.narrow(1, at_pos, n), o).logits);
      at_pos += n;
    }
    const at::Tensor real = mask.unsqueeze(-1).to(at::kFloat);
    // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
    CHECK(rel_err(at::cat(got, 1) * real, expect * real) < 1e-5);
    // padding is neutral: the padded row equals the same tokens alone
    const at::Tensor alone = m.forward(ids[1].narrow(0, 3, 7).unsqueeze(0)).logits;
    CHECK(rel_err(expect[1].narrow(0, 3, 7), alone[0]) < 1e-5);
  }
  SECTION("chunk size does not change the result") {
    const at::Tensor a = m.forward(ids).logits;
    TinySpec s = q35_spec("LAL");
    for (int64_t chunk : {1, 3, 64}) {
      Model other = sharp_q35(s, chunk);
      // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
      CHECK(rel_err(other.forward(ids).logits, a) < 1e-5);
    }
  }
}

TEST_CASE("qwen3_5_text checkpoints and configs round-trip", "[model][qwen3_5][io]") {
  const Model m = sharp_q35(q35_spec("LLA"));
  const std::string dir = model_test::scratch("q35_roundtrip");
  m.save(dir);
  const Model back = Model::load(dir);
  const auto a = m.parameters(), b = back.parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(at::equal(a[i].tensor, b[i].tensor));
  }
  const Config& c = back.config();
  CHECK((c.layer_types == std::vector<std::string>{"linear_attention", "linear_attention", "full_attention"}));
  CHECK(c.rotary_dim == 2);
  CHECK(c.gdn.k_heads == 2);
  CHECK(c.gdn.v_heads == 4);
  CHECK(c.gdn.k_head_dim == 8);
  CHECK(c.norm_offset);
  // full_attention_interval instead of layer_types; HF's defaults for partial RoPE
  const Config c2 = parse_config(R"({"model_type": "qwen3_5_text", "vocab_size": 61, "hidden_size": 32,
    "intermediate_size": 48, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 16, "full_attention_interval": 3, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
    "linear_key_head_dim": 8, "linear_value_head_dim": 4})", "c2");
  CHECK((c2.layer_types == std::vector<std::string>{"linear_attention", "linear_attention", "full_attention",
                                                    "linear_attention", "linear_attention", "full_attention"}));
  CHECK(c2.rotary_dim == 4);  // 0.25 * 16
  // errors name the key
  model_test::require_error([] {
    parse_config(R"({"model_type": "qwen3_5_text", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8,
      "layer_types": ["linear_attention", "mamba"]})", "bad.json");
  }, {"bad.json", "layer_types", "mamba"});
  model_test::require_error([] {
    parse_config(R"({"model_type": "qwen3_5_text", "vocab_size": 61, "hidden_size": 32, "intermediate_size": 48,
      "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8, "linear_num_key_heads": 3,
      "linear_num_value_heads": 4})", "bad2.json");
  }, {"bad2.json", "linear_num_value_heads", "multiple of linear_num_key_heads 3"});
}

TEST_CASE("qwen3_5 composite checkpoints load as their text model", "[model][qwen3_5][io]") {
  // the released layout: config.json with text_config, tensors under model.language_model.*,
  // a vision tower and MTP heads beside (skipped)
  const Model m = sharp_q35(q35_spec("LA"), 64);
  const std::string dir = model_test::scratch("q35_text");
  m.save(dir);
  nlohmann::json text;
  std::ifstream(dir + "/config.json") >> text;
  std::vector<std::pair<std::string, at::Tensor>> renamed;
  for (const Param& p : m.parameters())
    renamed.emplace_back(p.name.rfind("model.", 0) == 0 ? "model.language_model." + p.name.substr(6) : p.name,
                         p.tensor.detach());
  renamed.emplace_back("model.visual.blocks.0.attn.qkv.weight", at::ones({6, 2}));
  renamed.emplace_back("mtp.fc.weight", at::ones({4, 4}));
  const at::Tensor ids = model_test::random_ids(2, 7, 61, 5);
  const at::Tensor expect = m.forward(ids).logits;
  SECTION("as qwen3_5 (text_config)") {
    const std::string d2 = model_test::scratch("q35_composite");
    ltrun::io::save_checkpoint(d2, renamed);
    const nlohmann::json composite = {{"model_type", "qwen3_5"}, {"architectures", {"Qwen3_5ForConditionalGeneration"}},
                                      {"text_config", text}, {"tie_word_embeddings", false},
                                      {"vision_config", {{"depth", 1}}}};
    std::ofstream(d2 + "/config.json") << composite.dump();
    const Model r = Model::load(d2);
    CHECK(r.config().model_type == "qwen3_5");
    CHECK(r.config().layer_types == m.config().layer_types);
    CHECK(at::equal(r.forward(ids).logits, expect));
    // and it saves in the same layout
    const std::string d3 = model_test::scratch("q35_composite_saved");
    r.save(d3);
    CHECK(at::equal(Model::load(d3).forward(ids).logits, expect));
  }
  SECTION("as qwen3_5_text (HF's Qwen3_5ForCausalLM reads the same names)") {
    const std::string d2 = model_test::scratch("q35_text_renamed");
    ltrun::io::save_checkpoint(d2, renamed);
    std::ofstream(d2 + "/config.json") << text.dump();
    CHECK(at::equal(Model::load(d2).forward(ids).logits, expect));
  }
  SECTION("a bad text_config names it") {
    const std::string d2 = model_test::scratch("q35_bad");
    nlohmann::json bad = text;
    bad["linear_num_key_heads"] = 3;
    std::ofstream(d2 + "/config.json") << nlohmann::json{{"model_type", "qwen3_5"}, {"text_config", bad}}.dump();
    model_test::require_error([&] { Model::load(d2); }, {"text_config.linear_num_value_heads"});
  }
}

TEST_CASE("qwen3_5_text parameters carry parts; sites compose the residual", "[model][qwen3_5][sites]") {
  const Model m = sharp_q35(q35_spec("LA"));
  std::map<std::string, std::pair<ParamPart, bool>> tag;
  for (const Param& p : m.parameters()) tag[p.name] = {p.part, p.decay};
  CHECK(tag.at("model.embed_tokens.weight").first == ParamPart::Embeddings);
  for (const char* n : {"A_log", "dt_bias", "norm.weight"})
    CHECK((tag.at(std::string("model.layers.0.linear_attn.") + n) == std::make_pair(ParamPart::Mixer, false)));
  for (const char* n : {"in_proj_qkv", "in_proj_z", "in_proj_a", "in_proj_b", "conv1d", "out_proj"})
    CHECK((tag.at(std::string("model.layers.0.linear_attn.") + n + ".weight") == std::make_pair(ParamPart::Mixer, true)));
  CHECK((tag.at("model.layers.1.self_attn.q_norm.weight") == std::make_pair(ParamPart::Mixer, false)));
  CHECK((tag.at("model.layers.0.input_layernorm.weight") == std::make_pair(ParamPart::Norm, false)));
  CHECK(tag.at("model.layers.0.mlp.up_proj.weight").first == ParamPart::Mlp);
  CHECK(tag.at("model.norm.weight").first == ParamPart::Norm);
  CHECK(tag.at("lm_head.weight").first == ParamPart::Head);
  CHECK(m.layer_kind(0) == "linear_attention");
  CHECK(m.layer_kind(1) == "full_attention");

  const at::Tensor ids = model_test::random_ids(1, 6, 61, 4);
  ForwardOptions o;
  o.capture = true;
  o.capture_sites = {Site::MixerOut, Site::ResidMid, Site::MlpOut};
  const ForwardResult r = m.forward(ids, o);
  for (int l : {0, 1}) {
    // the same fp32 sums written twice: allclose's defaults (1e-5, 1e-8) absorb one rounding
    CHECK(at::allclose(r.sites.at({l, Site::ResidMid}), r.hidden[size_t(l)] + r.sites.at({l, Site::MixerOut})));
    CHECK(at::allclose(r.hidden[size_t(l) + 1], r.sites.at({l, Site::ResidMid}) + r.sites.at({l, Site::MlpOut})));
  }
  // zeroing the Gated DeltaNet's output leaves resid_mid as the layer's input
  ForwardOptions z;
  z.capture = true;
  z.capture_sites = {Site::ResidMid};
  z.intervene[{0, Site::MixerOut}] = Intervention::zero(at::arange(6));
  const ForwardResult zr = m.forward(ids, z);
  CHECK(at::equal(zr.sites.at({0, Site::ResidMid}), zr.hidden[0]));
}

TEST_CASE("qwen3_5_text gradients of the Gated DeltaNet match finite differences", "[model][qwen3_5][grad]") {
  // double precision: central differences with step 1e-6 are good to ~1e-8 relative
  Model m = sharp_q35(q35_spec("LA"));
  m.to(c10::kCPU, c10::kDouble);
  const at::Tensor ids = model_test::random_ids(1, 7, 61, 9);
  const at::Tensor w = randn({1, 7, 61}, 11).to(at::kDouble);  // a random linear loss of the logits
  auto loss = [&]() { return (m.forward(ids).logits * w).sum(); };
  m.set_requires_grad(true);
  loss().backward();
  at::NoGradGuard no_grad;
  int checked = 0;
  for (const Param& p : m.parameters()) {
    if (p.layer != 0) continue;  // the Gated DeltaNet layer: every tensor of it, a few entries each
    const at::Tensor flat = p.tensor.view({-1});
    const at::Tensor g = p.tensor.grad().view({-1});
    for (int64_t i : {int64_t(0), flat.numel() / 2, flat.numel() - 1}) {
      const double x0 = flat[i].item<double>(), h = 1e-6;
      flat[i] = x0 + h;
      const double up = loss().item<double>();
      flat[i] = x0 - h;
      const double down = loss().item<double>();
      flat[i] = x0;
      const double fd = (up - down) / (2 * h), an = g[i].item<double>();
      INFO(p.name << "[" << i << "]: autograd " << an << ", finite differences " << fd);
      // double: central differences with h = 1e-6 are good to ~1e-8 relative; 1e-6 is 100x
      CHECK(std::abs(an - fd) <= 1e-6 * std::max(1.0, std::abs(fd)));
      ++checked;
    }
  }
  CHECK(checked >= 42);  // 14 tensors: 9 of the mixer, 3 of the MLP, 2 norms
}

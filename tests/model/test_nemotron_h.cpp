// tests/model/test_nemotron_h.cpp: Nemotron-H (Mamba2 / attention / MLP layers): the chunked
// SSD scan against its one-step form and a plain recurrence in double; the whole model
// against a per-token reference written from HF's modeling code; decode state against
// recomputing the sequence; checkpoint round trip and HF's tensor names; parts and sites.
#include <ATen/core/grad_mode.h>

#include <map>

#include "model_test_util.h"
#include "runtime/io/checkpoint.h"
#include "runtime/model/arch/mamba2.h"
#include "runtime/model/model.h"

using namespace ltrun::model;
using model_test::rel_err;

namespace {

TinySpec nh_spec(const std::string& pattern = "M*-M", uint64_t seed = 1) {
  TinySpec s = model_test::spec("nemotron_h", seed);
  s.pattern = pattern;
  s.layers = int64_t(pattern.size());
  s.chunk = 4;  // several chunks in a few tokens
  return s;
}

// Larger weights than init's 0.02 so that every path contributes well above rounding; A_log,
// D and dt_bias keep their scale (they set decays) but are made unequal across heads.
Model sharp_nh(const TinySpec& s) {
  Model m = make_tiny(s);
  at::NoGradGuard no_grad;
  at::Generator g = at::detail::createCPUGenerator(7);
  for (auto& p : m.parameters()) {
    const auto r = at::rand(p.tensor.sizes(), g, at::kFloat);
    if (p.decay) p.tensor.mul_(p.part == ParamPart::Embeddings ? 40 : 12);
    else if (p.name.find("A_log") != std::string::npos) p.tensor.add_(r - 0.5);
    else p.tensor.add_(r * 0.5 - 0.25);
  }
  return m;
}

at::Tensor randn(std::vector<int64_t> shape, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::kFloat);
}

// The recurrence itself, token by token in double:
//   s = exp(dt A) s + dt x B^T,  y = s C
at::Tensor naive_scan(const at::Tensor& x, const at::Tensor& dt, const at::Tensor& A,
                      const at::Tensor& B, const at::Tensor& C, at::Tensor* final_state) {
  const int64_t b = x.size(0), T = x.size(1), h = x.size(2), p = x.size(3), n = B.size(3);
  at::Tensor s = at::zeros({b, h, p, n}, at::kDouble);
  at::Tensor y = at::zeros({b, T, h, p}, at::kDouble);
  const at::Tensor xd = x.to(at::kDouble), dd = dt.to(at::kDouble), Ad = A.to(at::kDouble);
  const at::Tensor Bd = B.to(at::kDouble), Cd = C.to(at::kDouble);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t bb = 0; bb < b; ++bb)
      for (int64_t hh = 0; hh < h; ++hh) {
        const double d = dd[bb][t][hh].item<double>();
        s[bb][hh] = s[bb][hh] * std::exp(d * Ad[hh].item<double>()) +
                    d * xd[bb][t][hh].unsqueeze(1) * Bd[bb][t][hh].unsqueeze(0);
        y[bb][t][hh] = s[bb][hh].matmul(Cd[bb][t][hh]);
      }
  if (final_state) *final_state = s;
  return y;
}

}  // namespace

TEST_CASE("the chunked SSD scan equals the recurrence and its one-step form", "[model][nemotron_h][ssd]") {
  const int64_t b = 2, h = 4, p = 3, n = 5;
  for (int64_t T : {1, 7, 8, 13}) {
    for (int64_t chunk : {1, 4, 16}) {
      DYNAMIC_SECTION("T " << T << ", chunk " << chunk) {
        const at::Tensor x = randn({b, T, h, p}, 1), B = randn({b, T, h, n}, 2),
                         C = randn({b, T, h, n}, 3);
        const at::Tensor dt = at::softplus(randn({b, T, h}, 4)), A = -at::exp(randn({h}, 5));
        at::Tensor ref_state, final_state;
        const at::Tensor ref = naive_scan(x, dt, A, B, C, &ref_state);
        const at::Tensor y = ssd_chunked(x, dt, A, B, C, chunk, {}, &final_state);
        // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
        CHECK(rel_err(y, ref) < 1e-5);
        CHECK(rel_err(final_state, ref_state) < 1e-5);
        // one step at a time from a zero state
        at::Tensor s = at::zeros({b, h, p, n}, at::kFloat);
        std::vector<at::Tensor> steps;
        for (int64_t t = 0; t < T; ++t)
          steps.push_back(ssd_step(x.select(1, t), dt.select(1, t), A, B.select(1, t), C.select(1, t), s));
        // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
        CHECK(rel_err(at::stack(steps, 1), ref) < 1e-5);
        CHECK(rel_err(s, ref_state) < 1e-5);
        // split in two: the second half from the first half's state
        if (T > 2) {
          const int64_t k = T / 2;
          at::Tensor mid, end;
          const at::Tensor y1 = ssd_chunked(x.narrow(1, 0, k), dt.narrow(1, 0, k), A, B.narrow(1, 0, k),
                                            C.narrow(1, 0, k), chunk, {}, &mid);
          const at::Tensor y2 = ssd_chunked(x.narrow(1, k, T - k), dt.narrow(1, k, T - k), A,
                                            B.narrow(1, k, T - k), C.narrow(1, k, T - k), chunk, mid, &end);
          // fp32 in another summation order: see rel_err's error budget (model_test_util.h)
          CHECK(rel_err(at::cat({y1, y2}, 1), ref) < 1e-5);
          CHECK(rel_err(end, ref_state) < 1e-5);
        }
      }
    }
  }
}

namespace {

// Logits [T, vocab] of one sequence from NemotronH's modeling code (torch path) transcribed
// in double with a per-token Mamba2 recurrence and per-head attention; shares nothing with
// runtime/model but the parameter names.
at::Tensor reference_logits(const Model& m, const at::Tensor& ids) {
  const Config& c = m.config();
  const Mamba2Config& mc = c.mamba;
  std::map<std::string, at::Tensor> P;
  for (const Param& p : m.parameters()) P[p.name] = p.tensor.detach().to(at::kDouble);
  const double eps = c.rms_norm_eps;
  auto norm = [&](const at::Tensor& x, const std::string& w) {
    return x / at::sqrt(x.pow(2).mean(-1, true) + eps) * P.at(w);
  };
  auto silu = [](const at::Tensor& x) { return x / (1 + at::exp(-x)); };
  const int64_t T = ids.size(0), Hd = c.hidden_size;
  at::Tensor h = P.at("backbone.embeddings.weight").index_select(0, ids);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "backbone.layers." + std::to_string(l) + ".";
    const at::Tensor x = norm(h, p + "norm.weight");
    const std::string& kind = c.layer_types[size_t(l)];
    at::Tensor out;
    if (kind == "mlp") {
      const at::Tensor u = at::relu(x.matmul(P.at(p + "mixer.up_proj.weight").t()));
      out = (u * u).matmul(P.at(p + "mixer.down_proj.weight").t());
    } else if (kind == "attention") {
      const int64_t hd = c.head_dim, rep = c.n_heads / c.n_kv_heads;
      const at::Tensor q = x.matmul(P.at(p + "mixer.q_proj.weight").t()),
                       k = x.matmul(P.at(p + "mixer.k_proj.weight").t()),
                       v = x.matmul(P.at(p + "mixer.v_proj.weight").t());
      at::Tensor heads = at::zeros({T, c.n_heads * hd}, at::kDouble);
      for (int64_t hh = 0; hh < c.n_heads; ++hh) {
        const int64_t g = hh / rep;
        at::Tensor scores = q.narrow(1, hh * hd, hd).matmul(k.narrow(1, g * hd, hd).t()) / std::sqrt(double(hd));
        scores = scores.masked_fill(at::ones({T, T}, at::kBool).triu(1), -INFINITY);
        heads.narrow(1, hh * hd, hd).copy_(at::softmax(scores, -1).matmul(v.narrow(1, g * hd, hd)));
      }
      out = heads.matmul(P.at(p + "mixer.o_proj.weight").t());
    } else {
      const int64_t I = mc.inner(), G = mc.groups, N = mc.state, H = mc.heads, Pd = mc.head_dim,
                    K = mc.conv_kernel, CD = mc.conv_dim();
      const at::Tensor proj = x.matmul(P.at(p + "mixer.in_proj.weight").t());
      const at::Tensor z = proj.narrow(1, 0, I), xbc = proj.narrow(1, I, CD),
                       dtr = proj.narrow(1, I + CD, H);
      const at::Tensor w = P.at(p + "mixer.conv1d.weight"), cb = P.at(p + "mixer.conv1d.bias");
      at::Tensor conv = at::zeros({T, CD}, at::kDouble);
      for (int64_t t = 0; t < T; ++t) {
        at::Tensor acc = cb.clone();
        for (int64_t j = 0; j < K; ++j) {  // tap j reads input t - (K - 1 - j)
          const int64_t src = t - (K - 1 - j);
          if (src >= 0) acc = acc + w.select(2, j).squeeze(1) * xbc[src];
        }
        conv[t] = silu(acc);
      }
      const at::Tensor A = -at::exp(P.at(p + "mixer.A_log"));
      const at::Tensor D = P.at(p + "mixer.D"), dtb = P.at(p + "mixer.dt_bias");
      at::Tensor s = at::zeros({H, Pd, N}, at::kDouble);
      at::Tensor y = at::zeros({T, I}, at::kDouble);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t hh = 0; hh < H; ++hh) {
          const int64_t g = hh / (H / G);
          const double d = std::max(at::softplus(dtr[t][hh] + dtb[hh]).item<double>(), mc.dt_min);
          const at::Tensor xh = conv[t].narrow(0, hh * Pd, Pd);
          const at::Tensor Bg = conv[t].narrow(0, I + g * N, N), Cg = conv[t].narrow(0, I + G * N + g * N, N);
          s[hh] = s[hh] * std::exp(d * A[hh].item<double>()) + d * xh.unsqueeze(1) * Bg.unsqueeze(0);
          y[t].narrow(0, hh * Pd, Pd).copy_(s[hh].matmul(Cg) + D[hh] * xh);
        }
      }
      at::Tensor gated = (y * silu(z)).view({T, G, I / G});
      gated = (gated / at::sqrt(gated.pow(2).mean(-1, true) + eps)).view({T, I}) * P.at(p + "mixer.norm.weight");
      out = gated.matmul(P.at(p + "mixer.out_proj.weight").t());
    }
    h = h + out;
  }
  (void)Hd;
  return norm(h, "backbone.norm_f.weight").matmul(P.at("lm_head.weight").t());
}

}  // namespace

TEST_CASE("nemotron_h forward matches a per-token reference of HF's code", "[model][nemotron_h]") {
  const Model m = sharp_nh(nh_spec("M*-M-*M"));
  const at::Tensor ids = model_test::random_ids(1, 11, 61, 3);  // 11 tokens: chunks of 4 + a partial
  const at::Tensor ref = reference_logits(m, ids[0]);
  const at::Tensor got = m.forward(ids).logits[0];
  INFO("logit scale " << ref.abs().max().item<double>());
  CHECK(ref.std().item<double>() > 0.5);  // sharp enough that a wrong path shows
  CHECK(rel_err(got, ref) < 1e-4);
}

TEST_CASE("nemotron_h decode state equals recomputing the sequence", "[model][nemotron_h][state]") {
  const Model m = sharp_nh(nh_spec("M*-M"));
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
    // the padded row equals the same tokens without padding
    const at::Tensor alone = m.forward(ids[1].narrow(0, 3, 7).unsqueeze(0)).logits;
    CHECK(rel_err(expect[1].narrow(0, 3, 7), alone[0]) < 1e-5);
  }
}

TEST_CASE("nemotron_h checkpoints round-trip and read HF's names", "[model][nemotron_h][io]") {
  const Model m = sharp_nh(nh_spec("M*-"));
  const std::string dir = model_test::scratch("nh_roundtrip");
  m.save(dir);
  const Model back = Model::load(dir);
  const auto a = m.parameters(), b = back.parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(at::equal(a[i].tensor, b[i].tensor));
  }
  CHECK((back.config().layer_types == std::vector<std::string>{"mamba", "attention", "mlp"}));
  // transformers 5 saves backbone.embedding.weight; its in-memory names are model.*
  for (const char* prefix : {"backbone.", "model."}) {
    DYNAMIC_SECTION(prefix) {
      const std::string d2 = model_test::scratch(std::string("nh_names_") + prefix);
      std::vector<std::pair<std::string, at::Tensor>> renamed;
      for (const Param& p : a) {
        std::string n = p.name;
        if (n == "backbone.embeddings.weight") n = "backbone.embedding.weight";
        if (n.rfind("backbone.", 0) == 0) n = prefix + n.substr(9);
        renamed.emplace_back(n, p.tensor.detach());
      }
      renamed.emplace_back("mtp.layers.0.norm.weight", at::ones({4}));  // skipped, as HF does
      ltrun::io::save_checkpoint(d2, renamed);
      std::filesystem::copy_file(dir + "/config.json", d2 + "/config.json");
      const Model r = Model::load(d2);
      const at::Tensor ids = model_test::random_ids(1, 5, 61, 2);
      CHECK(at::equal(r.forward(ids).logits, m.forward(ids).logits));
    }
  }
}

TEST_CASE("nemotron_h parameters carry parts; sites compose the residual", "[model][nemotron_h][sites]") {
  const Model m = sharp_nh(nh_spec("M*-"));
  std::map<std::string, std::pair<ParamPart, bool>> tag;
  for (const Param& p : m.parameters()) tag[p.name] = {p.part, p.decay};
  CHECK(tag.at("backbone.embeddings.weight").first == ParamPart::Embeddings);
  CHECK((tag.at("backbone.layers.0.mixer.A_log") == std::make_pair(ParamPart::Mixer, false)));
  CHECK((tag.at("backbone.layers.0.mixer.in_proj.weight") == std::make_pair(ParamPart::Mixer, true)));
  CHECK((tag.at("backbone.layers.0.norm.weight") == std::make_pair(ParamPart::Norm, false)));
  CHECK(tag.at("backbone.layers.2.mixer.up_proj.weight").first == ParamPart::Mlp);
  CHECK(tag.at("backbone.norm_f.weight").first == ParamPart::Norm);
  CHECK(tag.at("lm_head.weight").first == ParamPart::Head);
  CHECK(m.layer_kind(0) == "mamba");
  CHECK((m.layer_sites(2) == std::vector<Site>{Site::MlpOut, Site::ResidPost}));

  const at::Tensor ids = model_test::random_ids(1, 6, 61, 4);
  ForwardOptions o;
  o.capture = true;
  o.capture_sites = {Site::MixerOut, Site::MlpOut};
  const ForwardResult r = m.forward(ids, o);
  // the same fp32 sum written twice: equal to the bit; allclose's defaults (1e-5, 1e-8) only absorb
  // one rounding
  CHECK(at::allclose(r.hidden[1], r.hidden[0] + r.sites.at({0, Site::MixerOut})));
  CHECK(at::allclose(r.hidden[3], r.hidden[2] + r.sites.at({2, Site::MlpOut})));
  CHECK(!r.sites.count({0, Site::MlpOut}));
  // zeroing the MLP's output leaves that layer's residual as its input
  ForwardOptions z;
  z.capture = true;
  z.intervene[{2, Site::MlpOut}] = Intervention::zero(at::arange(6));
  const ForwardResult zr = m.forward(ids, z);
  CHECK(at::equal(zr.hidden[3], zr.hidden[2]));
  ForwardOptions bad;
  bad.intervene[{0, Site::MlpOut}] = Intervention::zero(at::arange(1));
  model_test::require_error([&] { m.forward(ids, bad); }, {"mlp_out of layer 0", "mamba layer has no mlp_out", "mixer_out, resid_post"});
}

TEST_CASE("nemotron_h gradients match finite differences", "[model][nemotron_h][grad]") {
  // double precision: central differences with step 1e-6 are good to ~1e-8 relative
  Model m = sharp_nh(nh_spec("M*-"));
  m.to(c10::kCPU, c10::kDouble);
  const at::Tensor ids = model_test::random_ids(1, 7, 61, 9);
  const at::Tensor w = randn({1, 7, 61}, 11).to(at::kDouble);  // a random linear loss of the logits
  auto loss = [&]() { return (m.forward(ids).logits * w).sum(); };
  m.set_requires_grad(true);
  const at::Tensor l = loss();
  l.backward();
  at::NoGradGuard no_grad;
  int checked = 0;
  for (const Param& p : m.parameters()) {
    if (p.layer != 0) continue;  // the Mamba2 layer: every tensor of it, a few entries each
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
      // double: central differences with h = 1e-6 are good to ~1e-8 relative (above); 1e-6 is 100x
      CHECK(std::abs(an - fd) <= 1e-6 * std::max(1.0, std::abs(fd)));
      ++checked;
    }
  }
  CHECK(checked >= 27);  // 9 tensors (norm, dt_bias, A_log, D, conv w/b, in_proj, mixer norm, out_proj)
}

namespace {

Mamba2Weights mamba_weights(const Model& m, int layer) {
  std::map<std::string, at::Tensor> P;
  for (const Param& p : m.parameters()) P[p.name] = p.tensor;
  const std::string pre = "backbone.layers." + std::to_string(layer) + ".mixer.";
  auto get = [&](const std::string& n) { return P.count(pre + n) ? P.at(pre + n) : at::Tensor(); };
  Mamba2Weights w;
  w.in_proj = get("in_proj.weight"), w.in_bias = get("in_proj.bias"), w.conv_w = get("conv1d.weight");
  w.conv_b = get("conv1d.bias"), w.dt_bias = get("dt_bias"), w.A_log = get("A_log"), w.D = get("D");
  w.norm = get("norm.weight"), w.out_proj = get("out_proj.weight"), w.out_bias = get("out_proj.bias");
  REQUIRE(w.in_proj.defined());
  REQUIRE(w.conv_b.defined());
  return w;
}

}  // namespace

TEST_CASE("the fused CPU Mamba2 mixer equals the ops path (chunked scan and step form)", "[model][nemotron_h][ssd]") {
  at::NoGradGuard no_grad;
  for (auto dtype : {at::kFloat, at::kDouble}) {
    Model m = sharp_nh(nh_spec("M"));  // chunk 4
    m.to(c10::kCPU, dtype);
    const Mamba2Weights w = mamba_weights(m, 0);
    const Mamba2Config& mc = m.config().mamba;
    REQUIRE(mc.chunk == 4);
    const double eps = m.config().rms_norm_eps;
    // fp32: the same sums in another order, one layer deep (see rel_err's error budget in
    // model_test_util.h: ~2e-6 of the largest value, 1e-5 is five times that); double: 1e-12
    const double tol = dtype == at::kFloat ? 1e-5 : 1e-12;
    for (int64_t T : {3, 4, 9}) {  // below, at and above the chunk
      DYNAMIC_SECTION("dtype " << c10::toString(dtype) << ", T " << T) {
        const at::Tensor x = randn({2, T + 4, m.config().hidden_size}, 20 + uint64_t(T)).to(dtype);
        at::Tensor mask = at::ones({2, T + 4}, at::kBool);
        mask[1].narrow(0, 0, 2).fill_(false);  // row 1 left-padded by 2
        // stateless, with and without padding
        for (bool masked : {false, true}) {
          const at::Tensor tm = masked ? mask.narrow(1, 0, T) : at::Tensor();
          const at::Tensor ops = mamba2_mixer(x.narrow(1, 0, T), w, mc, eps, tm, nullptr, Mamba2Path::Ops);
          const at::Tensor fused = mamba2_mixer(x.narrow(1, 0, T), w, mc, eps, tm, nullptr, Mamba2Path::Fused);
          INFO("masked " << masked << ", scale " << ops.abs().max().item<double>());
          CHECK(ops.abs().max().item<double>() > 1);  // sharp enough that a wrong path shows
          CHECK(rel_err(fused, ops) < tol);
        }
        // with a decode state: a prefill of T, two steps (ssd_step on the ops side), a chunk of 2
        Mamba2State so, sf;
        int64_t at_pos = 0;
        for (int64_t n : {T, int64_t(1), int64_t(1), int64_t(2)}) {
          const at::Tensor xs = x.narrow(1, at_pos, n), tm = mask.narrow(1, at_pos, n);
          const at::Tensor ops = mamba2_mixer(xs, w, mc, eps, tm, &so, Mamba2Path::Ops);
          const at::Tensor fused = mamba2_mixer(xs, w, mc, eps, tm, &sf, Mamba2Path::Fused);
          at_pos += n;
          INFO("after " << at_pos << " tokens");
          CHECK(rel_err(fused, ops) < tol);
          CHECK(rel_err(sf.ssm, so.ssm) < tol);
          CHECK(at::equal(sf.conv, so.conv));  // the raw conv inputs, copied
        }
      }
    }
  }
}

TEST_CASE("the Mamba2 mixer takes the ops path where gradients are asked", "[model][nemotron_h]") {
  Model m = sharp_nh(nh_spec("M"));
  const Mamba2Weights w = mamba_weights(m, 0);
  const at::Tensor x = randn({1, 5, m.config().hidden_size}, 30);
  CHECK(mamba2_fused_applies(x, w));
  m.set_requires_grad(true);
  CHECK_FALSE(mamba2_fused_applies(x, w));
  const at::Tensor y = mamba2_mixer(x, w, m.config().mamba, m.config().rms_norm_eps, {}, nullptr);
  CHECK(y.requires_grad());  // Auto: the ops path, differentiable
  model_test::require_error(
      [&] { mamba2_mixer(x, w, m.config().mamba, m.config().rms_norm_eps, {}, nullptr, Mamba2Path::Fused); },
      {"fused path needs a CPU fp32 or fp64 input without gradients"});
  {
    at::NoGradGuard no_grad;
    CHECK(mamba2_fused_applies(x, w));
  }
  CHECK_FALSE(mamba2_fused_applies(x.to(at::kBFloat16), w));
}

TEST_CASE("the fused Mamba2 mixer refuses a state of another batch size", "[model][nemotron_h][state]") {
  // its loops read raw pointers: a state of 2 rows with 3 input rows read and wrote past the
  // ends of both states (malloc aborted) before the sizes were checked
  at::NoGradGuard no_grad;
  const Model m = sharp_nh(nh_spec("M"));
  const Mamba2Weights w = mamba_weights(m, 0);
  const Mamba2Config& mc = m.config().mamba;
  const int64_t hidden = m.config().hidden_size;
  Mamba2State st;
  mamba2_mixer(randn({2, 5, hidden}, 40), w, mc, 1e-5, {}, &st, Mamba2Path::Fused);
  model_test::require_error([&] { mamba2_mixer(randn({3, 5, hidden}, 41), w, mc, 1e-5, {}, &st, Mamba2Path::Fused); },
                            {"conv state [2,", "does not match [3,"});
  st.conv = at::Tensor();  // only the SSM state left: that one is checked too
  model_test::require_error([&] { mamba2_mixer(randn({3, 5, hidden}, 41), w, mc, 1e-5, {}, &st, Mamba2Path::Fused); },
                            {"ssm state [2,", "does not match [3,"});
}

// tests/model/test_blocks.cpp: each shared block against its formula worked out by hand
// here, and a finite-difference gradient check of a whole stack in double precision.
#include <cmath>
#include <ATen/core/grad_mode.h>

#include "model_test_util.h"
#include "runtime/model/blocks.h"
#include "runtime/model/config.h"
#include "runtime/model/profile.h"

using namespace ltrun::model;
using model_test::rel_err;

TEST_CASE("rms_norm is x / sqrt(mean(x^2) + eps) * w", "[model][blocks]") {
  const at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f});
  const at::Tensor w = at::tensor({1.0f, 0.5f, 2.0f, -1.0f});
  const double eps = 1e-6, rms = std::sqrt((1 + 4 + 9 + 16) / 4.0 + eps);
  const at::Tensor y = rms_norm(x, w, eps);
  const double expect[] = {1 / rms, 2 * 0.5 / rms, 3 * 2 / rms, -4 / rms};
  for (int i = 0; i < 4; ++i) CHECK(y[i].item<double>() == Approx(expect[i]).epsilon(1e-6));

  // bf16: statistics in fp32, result rounded to bf16 before the weight (as HF does)
  const at::Tensor xb = x.to(at::kBFloat16), wb = w.to(at::kBFloat16);
  const at::Tensor yb = rms_norm(xb, wb, eps);
  CHECK(yb.scalar_type() == at::kBFloat16);
  CHECK(at::equal(yb, wb * (x / rms).to(at::kBFloat16)));
}

TEST_CASE("rope inverse frequencies follow transformers' formulas", "[model][blocks][rope]") {
  // theta 10000, dim 8: base^(i/8) for i = 0, 2, 4, 6 is 1, 10, 100, 1000
  const double dflt[] = {1, 0.1, 0.01, 0.001};
  auto check = [](const RopeFreqs& f, const std::vector<double>& expect) {
    REQUIRE(f.inv_freq.numel() == int64_t(expect.size()));
    for (size_t i = 0; i < expect.size(); ++i)
      CHECK(f.inv_freq[i].item<double>() == Approx(expect[i]).epsilon(1e-6));
  };
  RopeScaling s;
  SECTION("default") {
    const RopeFreqs f = rope_freqs(s, 10000, 8, 2048);
    check(f, {dflt[0], dflt[1], dflt[2], dflt[3]});
    CHECK(f.attention_factor == 1.0);
  }
  SECTION("linear divides by the factor") {
    s.type = "linear";
    s.factor = 4;
    check(rope_freqs(s, 10000, 8, 2048), {0.25, 0.025, 0.0025, 0.00025});
  }
  SECTION("llama3 keeps high, divides low, interpolates the band between") {
    s.type = "llama3";
    s.factor = 8;
    s.low_freq_factor = 1;
    s.high_freq_factor = 4;
    s.original_max_position_embeddings = 1024;
    // wavelengths 2pi/inv = 6.3, 62.8, 628.3, 6283 against the band [1024/4, 1024/1]
    const double smooth = (1024 / (2 * M_PI / 0.01) - 1) / (4 - 1);
    const double medium = (1 - smooth) * 0.01 / 8 + smooth * 0.01;
    check(rope_freqs(s, 10000, 8, 2048), {1, 0.1, medium, 0.001 / 8});
  }
  SECTION("yarn ramps from extrapolation to interpolation, scales attention") {
    s.type = "yarn";
    s.factor = 4;
    s.original_max_position_embeddings = 256;
    // correction dims: 8 ln(256 / (32 * 2pi)) / (2 ln 10000) = 0.105 -> floor 0,
    //                  8 ln(256 / (1 * 2pi)) / (2 ln 10000) = 1.610 -> ceil 2
    // ramp over i = 0..3: i / 2 clamped = 0, .5, 1, 1; extrapolation share = 1 - ramp
    const RopeFreqs f = rope_freqs(s, 10000, 8, 1024);
    check(f, {1, 0.5 * 0.1 / 4 + 0.5 * 0.1, 0.01 / 4, 0.001 / 4});
    CHECK(f.attention_factor == Approx(0.1 * std::log(4.0) + 1));
    // factor unset: max_position_embeddings / original
    s.factor.reset();
    CHECK(rope_freqs(s, 10000, 8, 1024).attention_factor == Approx(0.1 * std::log(4.0) + 1));
    // mscale / mscale_all_dim (DeepSeek style)
    s.factor = 4;
    s.mscale = 2;
    s.mscale_all_dim = 0.5;
    CHECK(rope_freqs(s, 10000, 8, 1024).attention_factor ==
          Approx((0.2 * std::log(4.0) + 1) / (0.05 * std::log(4.0) + 1)));
  }
}

TEST_CASE("apply_rope rotates half-split pairs by position * inv_freq", "[model][blocks][rope]") {
  // dim 4, theta 10000: inv_freq = [1, 0.01]; pairs are (x0, x2) and (x1, x3)
  const RopeFreqs f = rope_freqs(RopeScaling{}, 10000, 4, 2048);
  const at::Tensor x = at::tensor({1.0f, 2.0f, 3.0f, 4.0f}).view({1, 1, 1, 4});
  const int64_t pos = 3;
  const RopeTables t = rope_tables(f, at::full({1, 1}, pos, at::kLong), at::kFloat);
  const at::Tensor y = apply_rope(x, t).flatten();
  const double a = pos * 1.0, b = pos * 0.01;
  CHECK(y[0].item<double>() == Approx(1 * std::cos(a) - 3 * std::sin(a)).margin(1e-6));
  CHECK(y[2].item<double>() == Approx(3 * std::cos(a) + 1 * std::sin(a)).margin(1e-6));
  CHECK(y[1].item<double>() == Approx(2 * std::cos(b) - 4 * std::sin(b)).margin(1e-6));
  CHECK(y[3].item<double>() == Approx(4 * std::cos(b) + 2 * std::sin(b)).margin(1e-6));

  // yarn's attention factor scales cos and sin alike
  RopeFreqs scaled = f;
  scaled.attention_factor = 1.5;
  const RopeTables ts = rope_tables(scaled, at::full({1, 1}, pos, at::kLong), at::kFloat);
  CHECK(rel_err(apply_rope(x, ts), apply_rope(x, t) * 1.5) < 1e-6);
}

// Plain multi-head attention written out per head: kv head h / rep serves query head h.
static at::Tensor reference_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& key_mask) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), S = k.size(2);
  const int64_t rep = H / k.size(1);
  at::Tensor out = at::zeros_like(q);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      at::Tensor scores = q[b][h].matmul(k[b][h / rep].t()) / std::sqrt(double(D));
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < S; ++j)
          if (j > i + S - T || !key_mask[b][j].item<bool>()) scores[i][j] = -INFINITY;
      out[b][h] = at::softmax(scores, -1).matmul(v[b][h / rep]);
    }
  return out;
}

TEST_CASE("grouped-query attention equals MHA with repeated kv heads",
          "[model][blocks][attention]") {
  at::manual_seed(3);
  const auto opt = at::TensorOptions().dtype(at::kDouble);
  SECTION("causal, no cache") {
    const at::Tensor q = at::randn({2, 4, 5, 8}, opt), k = at::randn({2, 2, 5, 8}, opt),
                     v = at::randn({2, 2, 5, 8}, opt);
    const at::Tensor ref = reference_attention(q, k, v, at::ones({2, 5}, at::kBool));
    CHECK(rel_err(attention(q, k, v, {}, /*sdpa=*/false), ref) < 1e-12);
    if (sdpa_enabled()) CHECK(rel_err(attention(q, k, v, {}, /*sdpa=*/true), ref) < 1e-10);
  }
  SECTION("two new queries after three cached keys, one row left-padded") {
    const at::Tensor q = at::randn({2, 4, 2, 8}, opt), k = at::randn({2, 1, 5, 8}, opt),
                     v = at::randn({2, 1, 5, 8}, opt);
    at::Tensor mask = at::ones({2, 5}, at::kBool);
    mask[1][0] = false;
    mask[1][1] = false;
    const at::Tensor visible = visible_keys(mask, 2, 5);
    CHECK(visible.sizes() == at::IntArrayRef({2, 1, 2, 5}));
    const at::Tensor ref = reference_attention(q, k, v, mask);
    CHECK(rel_err(attention(q, k, v, visible, false), ref) < 1e-12);
    CHECK(rel_err(attention(q, k, v, {}, false),
                  reference_attention(q, k, v, at::ones({2, 5}, at::kBool))) < 1e-12);
  }
  SECTION("a query that sees no key (left padding) stays finite") {
    const at::Tensor q = at::randn({1, 2, 3, 4}), k = at::randn({1, 2, 3, 4}),
                     v = at::randn({1, 2, 3, 4});
    const at::Tensor mask = at::tensor({0, 1, 1}).view({1, 3}).to(at::kBool);
    CHECK(attention(q, k, v, visible_keys(mask, 3, 3), false).isfinite().all().item<bool>());
  }
}

TEST_CASE("grouped-query attention at T = 1 copies no keys or values per query head",
          "[model][blocks][attention][profile]") {
  // A decode step: 4 query heads per kv head over 256 cached positions, fp64 (off the fused
  // CPU pass, so the explicit path and, on LibTorch 2.x, SDPA run). Expanding K and V to every
  // query head (SDPA's old path) allocated rep x (K + V) = 1 MiB here; folding the query heads
  // allocates the scores, the mask and the output: below one copy of K and V (256 KiB).
  at::manual_seed(5);
  at::NoGradGuard no_grad;
  const auto opt = at::TensorOptions().dtype(at::kDouble);
  const int64_t B = 2, KV = 2, rep = 4, S = 256, D = 16;
  const at::Tensor q = at::randn({B, KV * rep, 1, D}, opt), k = at::randn({B, KV, S, D}, opt),
                   v = at::randn({B, KV, S, D}, opt);
  at::Tensor mask = at::ones({B, S}, at::kBool);
  mask[1].narrow(0, 0, 7).fill_(false);  // row 1 left-padded
  const at::Tensor visible = visible_keys(mask, 1, S);
  const at::Tensor ref = reference_attention(q, k, v, mask);
  const int64_t kv_bytes = int64_t(k.nbytes() + v.nbytes());
  for (bool sdpa : {false, true}) {
    INFO("sdpa " << sdpa << " (SDPA " << (sdpa_enabled() ? "on" : "absent or off") << ")");
    at::Tensor y;
    const MemoryPeak p = peak_memory([&] { y = attention(q, k, v, visible, sdpa); });
    CHECK(rel_err(y, ref) < 1e-10);  // fp64, as the SDPA check above
    INFO("peak " << p.peak << " bytes, K + V " << kv_bytes);
    CHECK(p.peak < kv_bytes);
  }
}

TEST_CASE("swiglu is down(silu(gate x) * up x)", "[model][blocks]") {
  at::manual_seed(4);
  const auto opt = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor x = at::randn({3, 6}, opt), gate = at::randn({5, 6}, opt),
                   up = at::randn({5, 6}, opt), down = at::randn({6, 5}, opt),
                   gb = at::randn({5}, opt), ub = at::randn({5}, opt), db = at::randn({6}, opt);
  const at::Tensor g = x.matmul(gate.t()) + gb;
  const at::Tensor expect =
      ((g / (1 + at::exp(-g))) * (x.matmul(up.t()) + ub)).matmul(down.t()) + db;
  CHECK(rel_err(swiglu(x, gate, up, down, gb, ub, db), expect) < 1e-12);
  const at::Tensor g0 = x.matmul(gate.t());
  CHECK(rel_err(swiglu(x, gate, up, down),
                ((g0 / (1 + at::exp(-g0))) * x.matmul(up.t())).matmul(down.t())) < 1e-12);
}

TEST_CASE("gradients of a stack match finite differences in double", "[model][blocks][grad]") {
  for (const std::string arch : {"qwen3", "qwen2"}) {
    DYNAMIC_SECTION(arch) {
      Model m = model_test::sharp_tiny(model_test::spec(arch), at::kDouble);
      m.set_requires_grad(true);
      const at::Tensor ids = model_test::random_ids(2, 5, m.config().vocab_size, 7);
      ForwardOptions o;
      o.attention_mask = at::tensor({0, 1, 1, 1, 1, 1, 1, 1, 1, 1}, at::kLong).view({2, 5});
      // the padding position's own output is garbage by design (it sees no key), so leave it out
      const at::Tensor w =
          at::randn({2, 5, m.config().vocab_size}, at::kDouble) * o.attention_mask.unsqueeze(-1);
      auto loss = [&] { return (m.forward(ids, o).logits * w).sum(); };
      loss().backward();
      for (const Param& p : m.parameters()) {
        // a few entries of every parameter of block 1, of the embeddings and of the head
        if (p.layer == 0 || p.layer == 2 || p.name == "model.norm.weight") continue;
        INFO(p.name);
        const at::Tensor flat = p.tensor.detach().view(-1);
        const at::Tensor grad = p.tensor.grad().view(-1);
        for (int64_t i : {int64_t(0), flat.numel() / 2, flat.numel() - 1}) {
          const double x0 = flat[i].item<double>(), h = 1e-6;
          at::NoGradGuard no_grad;
          flat[i] = x0 + h;
          const double up = loss().item<double>();
          flat[i] = x0 - h;
          const double down = loss().item<double>();
          flat[i] = x0;
          CHECK(grad[i].item<double>() == Approx((up - down) / (2 * h)).epsilon(1e-5).margin(1e-7));
        }
      }
    }
  }
}

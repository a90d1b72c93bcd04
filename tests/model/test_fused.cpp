// tests/model/test_fused.cpp: fewer, larger kernels (issue 35, item 2). q/k/v and gate/up as
// one GEMM each: their weights are views of one buffer per block under their HF names;
// inference reads the buffer (one GEMM), training (weights that need a gradient) the separate
// views; the same outputs either way, checkpoints keep the HF names. The CPU passes for
// inference (RMSNorm, RoPE, q/k norm + RoPE + cache write, decode attention, silu * up) against
// the plain path, and a decode step's kernel counts.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "runtime/model/blocks.h"
#include "runtime/model/config.h"
#include "runtime/model/generate.h"
#include "runtime/model/tiny.h"
#include "runtime/model/profile.h"
#include "tests/model/model_test_util.h"

using namespace ltrun;
using namespace ltrun::model;

namespace {

std::map<std::string, at::Tensor> by_name(const Model& m) {
  std::map<std::string, at::Tensor> out;
  for (const Param& p : m.parameters()) out[p.name] = p.tensor;
  return out;
}

// a then b, back to back in one buffer
bool adjacent(const at::Tensor& a, const at::Tensor& b) {
  return static_cast<const char*>(a.data_ptr()) + a.nbytes() == static_cast<const char*>(b.data_ptr());
}

}  // namespace

TEST_CASE("q/k/v and gate/up are views of one buffer per block, through load, clone and to") {
  for (const std::string arch : {"qwen3", "qwen2", "llama"}) {
    INFO(arch);
    Model m = model_test::sharp_tiny(model_test::spec(arch));
    auto check = [&](const Model& x) {
      auto p = by_name(x);
      for (int l = 0; l < x.n_layers(); ++l) {
        const std::string b = "model.layers." + std::to_string(l) + ".";
        CHECK(adjacent(p[b + "self_attn.q_proj.weight"], p[b + "self_attn.k_proj.weight"]));
        CHECK(adjacent(p[b + "self_attn.k_proj.weight"], p[b + "self_attn.v_proj.weight"]));
        CHECK(adjacent(p[b + "mlp.gate_proj.weight"], p[b + "mlp.up_proj.weight"]));
        if (arch == "qwen2") CHECK(adjacent(p[b + "self_attn.q_proj.bias"], p[b + "self_attn.k_proj.bias"]));
      }
    };
    check(m);
    check(m.clone());
    const std::string dir = model_test::scratch("fused_" + arch);
    m.save(dir);
    const Model loaded = Model::load(dir);
    check(loaded);
    // the checkpoint holds the HF names with their own values
    auto a = by_name(m), b = by_name(loaded);
    REQUIRE(a.size() == b.size());
    for (const auto& [name, t] : a) {
      INFO(name);
      REQUIRE(b.count(name));
      CHECK(at::equal(t, b[name]));
    }
    m.to(c10::kCPU, at::kDouble);
    check(m);
  }
}

TEST_CASE("the fused GEMMs give the separate ones' outputs, and training still reaches every weight") {
  for (const std::string arch : {"qwen3", "qwen2"}) {
    INFO(arch);
    Model m = model_test::sharp_tiny(model_test::spec(arch));
    const at::Tensor ids = model_test::random_ids(2, 6, m.config().vocab_size, 5);
    at::Tensor fused;
    {
      at::NoGradGuard ng;
      fused = m.forward(ids).logits;  // the buffer: one GEMM each
    }
    m.set_requires_grad(true);
    const at::Tensor sep = m.forward(ids).logits;  // weights need gradients: the separate views
    CHECK(model_test::rel_err(fused, sep.detach()) < 1e-5);
    sep.sum().backward();
    for (const Param& p : m.parameters()) {
      INFO(p.name);
      CHECK(p.tensor.grad().defined());
    }
    // an in-place update of the views (as the optimizer's) is what the buffer then reads
    {
      at::NoGradGuard ng;
      for (const Param& p : m.parameters()) p.tensor.add_(p.tensor.grad(), -1e-2);
    }
    m.set_requires_grad(true);
    const at::Tensor again = m.forward(ids).logits.detach();  // separate views
    at::NoGradGuard ng;
    const at::Tensor fused_after = m.forward(ids).logits;     // the buffer
    CHECK(model_test::rel_err(fused_after, fused) > 1e-4);     // the update changed the outputs
    CHECK(model_test::rel_err(fused_after, again) < 1e-5);
  }
}

TEST_CASE("a decode step of a decoder block runs 4 GEMMs (q/k/v, o, gate/up, down), not 7, and 2 norm kernels") {
  Model m = model_test::sharp_tiny(model_test::spec("qwen3"));
  const DecodeOps d = decode_ops(m, 1, 6, 4);
  CHECK(d.by_name.at("aten::mm") == 4);
  CHECK(d.by_name.at("ltrun::rmsnorm") == 2);
  // input and post-attention RMSNorms are one CPU kernel each, not six; the q/k norms, RoPE
  // and the cache writes one pass for all heads; attention one pass, its mask never built;
  // silu(gate) * up one pass
  CHECK(d.by_name.at("ltrun::qkv_heads") == 1);
  CHECK(d.by_name.at("ltrun::decode_attention") == 1);
  CHECK(d.by_name.at("ltrun::silu_mul") == 1);
  for (const char* gone : {"aten::rsqrt", "aten::neg", "ltrun::rope", "aten::bmm", "aten::_softmax",
                           "aten::masked_fill_", "aten::logical_not", "aten::silu"})
    CHECK(d.by_name.count(gone) == 0);
  CHECK(d.kernels <= 15);  // issue 35's target; docs/performance.md's CPU proxy table
}

// The CPU pass does the formula's operations per element in x's dtype: the same values up to
// a contraction of a*b + c*d into one fused multiply-add where the compiler emits one (1 ulp).
TEST_CASE("RoPE's CPU pass for inference equals the formula, strided heads included") {
  RopeScaling rs;
  const RopeFreqs f = rope_freqs(rs, 10000.0, 16, 2048);
  const at::Tensor pos = at::arange(5, at::kLong).unsqueeze(0).repeat({2, 1}) + 3;
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    const RopeTables t = rope_tables(f, pos, dtype);
    const at::Tensor x = at::randn({2, 5, 4, 16}).to(dtype).transpose(1, 2);  // [B, H, T, D], strided
    at::Tensor fast;
    {
      at::NoGradGuard ng;
      fast = apply_rope(x, t);
    }
    const at::Tensor ref = apply_rope(x.clone().requires_grad_(dtype == at::kFloat), t).detach();
    const double ulp = dtype == at::kFloat ? 1.2e-7 : 7.9e-3;
    CHECK(model_test::rel_err(fast, ref) <= 2 * ulp);
  }
}

namespace {

// [B, T, heads, D] views of a wider projection output, as AttentionWeights::forward sees them
at::Tensor heads_of(const at::Tensor& y, int64_t off, int64_t heads, int64_t D) {
  return y.narrow(-1, off, heads * D).view({y.size(0), y.size(1), heads, D});
}

}  // namespace

// The fused pass calls the same row functions as rms_norm's and apply_rope's CPU loops, so
// it equals them bit for bit; the cache views it writes are strided (a roomier buffer).
TEST_CASE("the fused q/k norm + RoPE + cache write equals rms_norm, apply_rope and the copies") {
  const int64_t B = 2, H = 4, KV = 2, D = 16, cap = 11, past = 3;
  RopeScaling rs;
  const RopeFreqs f = rope_freqs(rs, 10000.0, D, 2048);
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (int64_t T : {5, 1})  // prefill and a decode step
      for (bool norm : {true, false})
        for (bool rotate : {true, false}) {
          INFO("dtype " << c10::toString(dtype) << " T " << T << " norm " << norm << " rope " << rotate);
          at::NoGradGuard ng;
          const at::Tensor pos = at::arange(T, at::kLong).unsqueeze(0).repeat({B, 1}) + past;
          const RopeTables t = rope_tables(f, pos, dtype);
          const at::Tensor y = at::randn({B, T, (H + 2 * KV) * D}).to(dtype);
          const at::Tensor q = heads_of(y, 0, H, D), k = heads_of(y, H * D, KV, D), v = heads_of(y, (H + KV) * D, KV, D);
          const at::Tensor qn = norm ? (at::rand({D}) + 0.5).to(dtype) : at::Tensor();
          const at::Tensor kn = norm ? (at::rand({D}) + 0.5).to(dtype) : at::Tensor();
          const RopeTables* rope = rotate ? &t : nullptr;
          REQUIRE(qkv_heads_fused(q, qn, kn, rope));
          at::Tensor kc = at::zeros({B, KV, cap, D}, dtype), vc = at::zeros({B, KV, cap, D}, dtype);
          const at::Tensor qf = qkv_heads(q, k, v, qn, kn, 1e-6, rope, kc.narrow(2, past, T), vc.narrow(2, past, T));
          auto plain = [&](at::Tensor x, const at::Tensor& w) {
            if (norm) x = rms_norm(x, w, 1e-6);
            x = x.transpose(1, 2);
            return rotate ? apply_rope(x, t) : x;
          };
          CHECK(at::equal(qf, plain(q, qn)));
          CHECK(at::equal(kc.narrow(2, past, T), plain(k, kn)));
          CHECK(at::equal(vc.narrow(2, past, T), v.transpose(1, 2)));
          CHECK(kc.narrow(2, 0, past).abs().max().item<double>() == 0);  // nothing written elsewhere
        }
}

// The static cache's step: write_at puts row b's key and value at its own position of the
// whole cache (bit for bit what the call without it writes into that position's view), and
// nothing else in the cache changes; a position past the cache is refused, naming the row.
TEST_CASE("the fused q/k pass writes each row's keys and values at its own position (write_at)") {
  const int64_t B = 3, H = 4, KV = 2, D = 16, W = 9;
  RopeScaling rs;
  const RopeFreqs f = rope_freqs(rs, 10000.0, D, 2048);
  const std::vector<int64_t> where = {4, 0, 8};
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO("dtype " << c10::toString(dtype));
    at::NoGradGuard ng;
    const at::Tensor at_pos = at::tensor(where, at::kLong);
    const RopeTables t = rope_tables(f, at_pos.view({B, 1}), dtype);
    const at::Tensor y = at::randn({B, 1, (H + 2 * KV) * D}).to(dtype);
    const at::Tensor q = heads_of(y, 0, H, D), k = heads_of(y, H * D, KV, D), v = heads_of(y, (H + KV) * D, KV, D);
    const at::Tensor qn = (at::rand({D}) + 0.5).to(dtype), kn = (at::rand({D}) + 0.5).to(dtype);
    const at::Tensor k0 = at::randn({B, KV, W, D}).to(dtype), v0 = at::randn({B, KV, W, D}).to(dtype);
    at::Tensor kc = k0.clone(), vc = v0.clone();
    const at::Tensor qf = qkv_heads(q, k, v, qn, kn, 1e-6, &t, kc, vc, at_pos);
    at::Tensor kr = at::empty({B, KV, 1, D}, dtype), vr = at::empty({B, KV, 1, D}, dtype);
    const at::Tensor qr = qkv_heads(q, k, v, qn, kn, 1e-6, &t, kr, vr);
    CHECK(at::equal(qf, qr));
    at::Tensor kw = k0.clone(), vw = v0.clone();
    for (int64_t b = 0; b < B; ++b) {
      kw[b].narrow(1, where[size_t(b)], 1).copy_(kr[b]);
      vw[b].narrow(1, where[size_t(b)], 1).copy_(vr[b]);
    }
    CHECK(at::equal(kc, kw));
    CHECK(at::equal(vc, vw));
    const at::Tensor past = at::tensor(std::vector<int64_t>{4, 9, 0}, at::kLong);
    CHECK_THROWS_WITH(qkv_heads(q, k, v, qn, kn, 1e-6, &t, kc, vc, past),
                      Catch::Contains("row 1 writes positions 9..9 of a cache of 9"));
  }
}

// Error estimate for the fused decode attention against the explicit path and SDPA (sums in
// another order, each in fp32 with unit roundoff u = 2^-24): a score q.k over D terms differs by
// at most D u sum|q_i k_i| <= D^2 u max|q| max|k| before the scale; a change e in the scores moves
// the softmax weights by at most 2e in l1 (for small e), so the output moves by at most
// 2 e max|v|; the weighted sum over S keys adds S u max|v|. In bf16 each score, probability and
// output is rounded to bf16 (u_b = 2^-8): a score one bf16 ulp apart (relative u_b, at most
// u_b max|s| with the largest score s of the data) moves the weights by 2 u_b max|s|, and the
// probabilities' and output's roundings add 2 u_b max|v|. The tolerance is twice that bound;
// attention with the mask left out differs by more (so the check sees the mask).
TEST_CASE("the fused decode attention equals the explicit path and SDPA within rounding") {
  const int64_t B = 3, D = 16, cap = 20, S = 13;
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (auto [H, KV] : std::vector<std::pair<int64_t, int64_t>>{{4, 2}, {4, 4}, {6, 1}})
      for (bool masked : {true, false}) {
        INFO("dtype " << c10::toString(dtype) << " H " << H << " KV " << KV << " masked " << masked);
        const at::Tensor q = at::randn({B, 1, H, D}).to(dtype).transpose(1, 2);  // strided, as the model's
        const at::Tensor kc = at::randn({B, KV, cap, D}).to(dtype), vc = at::randn({B, KV, cap, D}).to(dtype);
        const at::Tensor k = kc.narrow(2, 0, S), v = vc.narrow(2, 0, S);  // the cache's first S positions
        at::Tensor visible;
        if (masked) {
          at::Tensor key_mask = at::ones({B, S}, at::kLong);
          key_mask[0].narrow(0, 0, 4).zero_();  // left padding of row 0
          key_mask[2].narrow(0, 0, 1).zero_();
          visible = visible_keys(key_mask, 1, S);
        }
        at::Tensor fast;
        {
          at::NoGradGuard ng;
          REQUIRE(decode_attention_fused(q, k, v, visible));
          fast = attention(q, k, v, visible);
        }
        REQUIRE(at::GradMode::is_enabled());  // the plain paths
        const at::Tensor eager = attention(q, k, v, visible, /*sdpa=*/false);
        const double scale = 1 / std::sqrt(double(D));
        const at::Tensor s = at::matmul(q.to(at::kDouble), k.repeat_interleave(H / KV, 1).to(at::kDouble).transpose(-1, -2));
        const double mq = q.abs().max().item<double>(), mk = k.abs().max().item<double>(),
                     mv = v.abs().max().item<double>(), ms = s.abs().max().item<double>() * scale;
        const double u = std::ldexp(1.0, -24), ub = std::ldexp(1.0, -8);
        double bound = 2 * (D * D * u * mq * mk * scale) * mv + S * u * mv;
        if (dtype == at::kBFloat16) bound += 2 * ub * ms * mv + 2 * ub * mv;
        const auto diff = [](const at::Tensor& a, const at::Tensor& b) {
          return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
        };
        CHECK(fast.sizes() == eager.sizes());
        CHECK(diff(fast, eager) <= 2 * bound);
        if (have_sdpa()) CHECK(diff(fast, attention(q, k, v, visible, /*sdpa=*/true)) <= 2 * bound);
        if (masked) CHECK(diff(fast, attention(q, k, v, at::Tensor(), /*sdpa=*/false)) > 2 * bound);
      }
}

// silu then the product, per element as ATen's two kernels; silu's exp may differ from ATen's
// vectorised one by an fp32 ulp, which can move the rounded silu (and so the product) by one
// ulp of the dtype each: within 2 ulps of the larger magnitudes.
TEST_CASE("the fused silu(gate) * up equals ATen's two kernels within an ulp per rounding") {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    INFO(c10::toString(dtype));
    const at::Tensor gu = (at::randn({2, 3, 40}) * 3).to(dtype);
    const at::Tensor g = gu.narrow(-1, 0, 20), u = gu.narrow(-1, 20, 20);  // a fused GEMM's halves
    at::Tensor fast;
    {
      at::NoGradGuard ng;
      fast = silu_mul(g, u);
    }
    const at::Tensor ref = at::silu(g) * u;  // grad mode on: the plain path
    const double ulp = dtype == at::kFloat ? 1.2e-7 : 7.9e-3;
    CHECK(model_test::rel_err(fast, ref) <= 2 * ulp);
  }
}

// The whole model: generate (grad mode off: the fused passes, prefill and decode with the
// cache, rows left-padded in a batch) against greedy steps recomputed from scratch with grad
// mode on (the plain path; weights frozen), GQA, with and without biases of std 0.5, fp32 and
// bf16. Each token generate chose must be the plain path's argmax up to the two paths'
// rounding: the plain logit of the chosen token within tol of the plain maximum (then the
// plain steps go on from generate's token). tol: the fused passes and the reference formulas
// differ by a few ulps of the dtype per rounding (rms_norm, RoPE, attention's sums), grown
// through 3 blocks and the head; a relative 8 ulps of the largest logit (2^-8 for bf16, 2^-24
// for fp32) bounds that; bf16 near-ties within it may pick either token.
TEST_CASE("greedy decode with the fused passes gives the plain path's tokens") {
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (bool bias : {false, true})
      for (const std::string arch : {"qwen3", "qwen2", "llama"}) {
        INFO(arch << " bias " << bias << " " << c10::toString(dtype));
        TinySpec sp = model_test::spec(arch);
        sp.attention_bias = bias;
        Model m = model_test::sharp_tiny(sp, dtype);
        if (bias) {
          at::NoGradGuard ng;
          for (const Param& p : m.parameters())
            if (p.name.find("bias") != std::string::npos) p.tensor.normal_(0, 0.5);
        }
        const std::vector<std::vector<int64_t>> prompts = {{5, 9, 2, 7, 1, 3}, {4, 8, 11}};
        GenerateOptions g;
        g.max_new_tokens = 6;
        g.stop_ids = std::vector<int64_t>{};
        const std::vector<Generation> fused = generate(m, prompts, g);
        REQUIRE(fused.size() == prompts.size());
        REQUIRE(at::GradMode::is_enabled());
        const double ulp = dtype == at::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -8);
        int exact = 0;
        for (size_t i = 0; i < prompts.size(); ++i) {
          REQUIRE(fused[i].tokens.size() == size_t(g.max_new_tokens));
          std::vector<int64_t> ids = prompts[i];
          for (const int64_t tok : fused[i].tokens) {
            const at::Tensor l =
                m.forward(at::tensor(ids, at::kLong).unsqueeze(0)).logits[0][-1].detach().to(at::kDouble);
            const double top = l.max().item<double>(), tol = 8 * ulp * l.abs().max().item<double>();
            CHECK(l[tok].item<double>() >= top - tol);
            exact += l.argmax().item<int64_t>() == tok;
            ids.push_back(tok);
          }
        }
        // fp32 leaves no near-ties here: every token is the plain argmax
        if (dtype == at::kFloat) CHECK(exact == 2 * g.max_new_tokens);
      }
}

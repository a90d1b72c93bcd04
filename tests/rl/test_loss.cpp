// tests/rl/test_loss.cpp: GRPO advantages, ratio, clipping, k3 KL and the three aggregations
// against values computed by hand (plain Python float arithmetic of the formulas in
// runtime/rl/loss.h, printed to 12 digits), and the presets.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "runtime/rl/loss.h"
#include "tests/test_util.h"

using namespace ltrun::rl;

TEST_CASE("group advantages: unbiased std, eps 1e-6, equal rewards give 0", "[rl][loss]") {
  // group 1: mean 0.5, unbiased std sqrt(1/3): A = +-0.5 / (0.577350 + 1e-6) = +-0.866023903787
  // group 2: all equal: 0
  const auto a = advantages({1, 0, 0, 1, 1, 1, 1, 1}, 4, AdvNorm::Std);
  REQUIRE(a.size() == 8);
  const double v = 0.866023903787;
  const std::vector<double> want = {v, -v, -v, v, 0, 0, 0, 0};
  for (size_t i = 0; i < 8; ++i) CHECK(a[i] == Approx(want[i]).margin(1e-12));
  // rewards 0.2 0.9 0.4: mean 0.5, std sqrt((0.09 + 0.16 + 0.01) / 2)
  const auto b = advantages({0.2, 0.9, 0.4}, 3, AdvNorm::Std);
  CHECK(b[0] == Approx(-0.832047986652).epsilon(1e-10));
  CHECK(b[1] == Approx(1.10939731554).epsilon(1e-10));
  CHECK(b[2] == Approx(-0.277349328884).epsilon(1e-10));
  const auto c = advantages({0.2, 0.9, 0.4}, 3, AdvNorm::None);  // Dr. GRPO: r - mean
  CHECK(c[0] == Approx(-0.3).margin(1e-12));
  CHECK(c[1] == Approx(0.4).margin(1e-12));
  CHECK(c[2] == Approx(-0.1).margin(1e-12));
  ltrun_test::require_error([] { advantages({1, 2, 3}, 2); }, {"multiple of group_size 2"});
  ltrun_test::require_error([] { advantages({1, 2}, 1); }, {"group_size >= 2"});
  CHECK(advantages({3}, 1, AdvNorm::None)[0] == 0);
}

namespace {

struct Case {
  at::Tensor logp, old, ref, mask, adv;
};

// B = 2 sequences, T = 3 tokens; the second row's last token is padding
Case small_case() {
  Case c;
  c.logp = at::tensor({-1.0, -2.0, -0.5, -1.5, -0.2, -3.0}, at::kFloat).view({2, 3});
  c.old = at::tensor({-1.1, -1.5, -0.5, -1.0, -0.2, -3.0}, at::kFloat).view({2, 3});
  c.ref = at::tensor({-1.2, -2.0, -0.4, -1.5, -0.3, -3.0}, at::kFloat).view({2, 3});
  c.mask = at::tensor({1, 1, 1, 1, 1, 0}, at::kFloat).view({2, 3});
  c.adv = at::tensor({1.0, -0.5}, at::kFloat);
  return c;
}

double num(const at::Tensor& t) { return t.item<double>(); }

}  // namespace

TEST_CASE("policy loss: ratio, clipping, k3 KL, aggregations by hand", "[rl][loss]") {
  const Case c = small_case();
  // ratios exp(logp - old): 1.105 0.607 1 | 0.607 1 (1); with A = 1, -0.5 and eps 0.2 only
  // row 2 token 1 is clipped (0.607 < 0.8, A < 0): clip fraction 1/5; approx KL = mean of
  // old - logp over the 5 tokens = 0.18.
  struct Want {
    Agg agg;
    double loss, pg, kl;
  };
  for (const Want& w : {Want{Agg::TokenMean, -0.361765533774, -0.362340315558, 0.00574781783792},
                        Want{Agg::SeqMeanTokenMean, -0.226430966328, -0.226950262965, 0.00519296636793},
                        Want{Agg::SeqMeanTokenSumNorm, -0.226103458609, -0.226462697224, 0.0035923861487}}) {
    DYNAMIC_SECTION(agg_name(w.agg)) {
      LossOptions o;
      o.kl = 0.1;
      o.agg = w.agg;
      o.max_len = 4;  // L of seq-mean-token-sum-norm: the constant max response length, not T
      const PolicyLoss r = policy_loss(c.logp, c.old, c.ref, c.adv, c.mask, o);
      // fp32 over 6 tokens against hand values in double: a few roundings of 6e-8 relative
      // each, so 1e-6; the k3 KL (exp(r) - r - 1 of small r) cancels to ~1e-2 of its terms: 1e-5
      CHECK(num(r.loss) == Approx(w.loss).epsilon(1e-6));
      CHECK(num(r.pg) == Approx(w.pg).epsilon(1e-6));
      CHECK(num(r.kl) == Approx(w.kl).epsilon(1e-5));
      CHECK(r.clip_frac == Approx(0.2));
      CHECK(r.approx_kl == Approx(0.18).epsilon(1e-6));
    }
  }
}

TEST_CASE("policy loss: clip-higher bounds the ratio above separately", "[rl][loss]") {
  const Case c = small_case();
  LossOptions o;
  o.clip_low = 0.2;
  o.clip_high = 0.05;  // row 1 token 1: ratio 1.105 > 1.05 with A > 0 is clipped too
  const PolicyLoss r = policy_loss(c.logp, c.old, at::Tensor(), c.adv, c.mask, o);
  CHECK(num(r.loss) == Approx(-0.351306131943).epsilon(1e-6));
  CHECK(r.clip_frac == Approx(0.4));
  CHECK(num(r.kl) == 0);
  o.clip_high = 0.28;  // nothing above 1.28: same as the unclipped-above value
  CHECK(num(policy_loss(c.logp, c.old, at::Tensor(), c.adv, c.mask, o).loss) ==
        Approx(-0.362340315558).epsilon(1e-6));
}

TEST_CASE("aggregations: denom makes micro-batches add up to the mini-batch", "[rl][loss]") {
  const Case c = small_case();
  for (Agg agg : {Agg::TokenMean, Agg::SeqMeanTokenMean, Agg::SeqMeanTokenSumNorm}) {
    LossOptions o;
    o.agg = agg;
    o.max_len = 4;
    o.kl = 0.1;
    const double whole = num(policy_loss(c.logp, c.old, c.ref, c.adv, c.mask, o).loss);
    o.denom = agg == Agg::TokenMean ? 5 : 2;  // mask tokens / rows of the whole batch
    double parts = 0;
    for (int64_t b = 0; b < 2; ++b)
      parts += num(policy_loss(c.logp.narrow(0, b, 1), c.old.narrow(0, b, 1), c.ref.narrow(0, b, 1),
                               c.adv.narrow(0, b, 1), c.mask.narrow(0, b, 1), o).loss);
    CHECK(parts == Approx(whole).epsilon(1e-6));  // fp32 sums in another grouping: a few 6e-8
  }
}

TEST_CASE("policy loss: gradient in logp, presets, bad input", "[rl][loss]") {
  Case c = small_case();
  // token-mean without KL: d loss / d logp = -A rho / n where unclipped is active, 0 where
  // clipped, 0 off the mask (n = 5)
  at::Tensor lp = c.logp.clone().requires_grad_(true);
  LossOptions o;
  policy_loss(lp, c.old, at::Tensor(), c.adv, c.mask, o).loss.backward();
  const at::Tensor g = lp.grad();
  // fp32 gradients of single terms against double: a few roundings of 6e-8 relative
  CHECK(g[0][0].item<double>() == Approx(-std::exp(0.1) / 5).epsilon(1e-6));
  CHECK(g[0][1].item<double>() == Approx(-std::exp(-0.5) / 5).epsilon(1e-6));
  CHECK(g[0][2].item<double>() == Approx(-1.0 / 5).epsilon(1e-6));
  CHECK(g[1][0].item<double>() == 0);  // clipped
  CHECK(g[1][1].item<double>() == Approx(0.5 / 5).epsilon(1e-6));
  CHECK(g[1][2].item<double>() == 0);  // padding

  const Preset gp = preset("grpo"), dp = preset("dr_grpo");
  CHECK(gp.norm == AdvNorm::Std);
  CHECK(gp.agg == Agg::TokenMean);
  CHECK(gp.kl == 0.001);
  CHECK(dp.norm == AdvNorm::None);
  CHECK(dp.agg == Agg::SeqMeanTokenSumNorm);
  CHECK(dp.kl == 0);
  ltrun_test::require_error([] { preset("ppo"); }, {"ppo", "grpo or dr_grpo"});
  ltrun_test::require_error([] { parse_agg("mean"); }, {"'mean'", "token-mean"});
  o.agg = Agg::SeqMeanTokenSumNorm;
  ltrun_test::require_error([&] { policy_loss(c.logp, c.old, c.ref, c.adv, c.mask, o); },
                            {"max_len"});
  o = LossOptions{};
  o.kl = 0.1;
  ltrun_test::require_error([&] { policy_loss(c.logp, c.old, at::Tensor(), c.adv, c.mask, o); },
                            {"needs ref_logp"});
  ltrun_test::require_error([&] { policy_loss(c.logp, c.old, c.ref, c.adv.narrow(0, 0, 1), c.mask, o); },
                            {"adv must be [B]"});
}

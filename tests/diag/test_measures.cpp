// tests/diag/test_measures.cpp: JS on the aligned top-k support, Ratio, ΔJS, normalisation
// and S(b), against hand-computed values and a plain-loop reference that shares no code
// with runtime/diag.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "diag_test_util.h"
#include "runtime/diag/measures.h"

using namespace ltrun::diag;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

double js1(std::vector<double> p, std::vector<double> q, int64_t topk = 0) {
  return js_divergence(at::tensor(p, at::kDouble), at::tensor(q, at::kDouble), topk).item<double>();
}

// The definition written out: union of the two top-k index sets (by sorting), each
// distribution restricted and renormalised there, then JS with natural logs.
double reference_js(const std::vector<double>& p, const std::vector<double>& q, size_t k) {
  const size_t V = p.size();
  std::vector<size_t> support;
  if (k == 0 || k >= V) {
    support.resize(V);
    std::iota(support.begin(), support.end(), 0);
  } else {
    for (const auto* d : {&p, &q}) {
      std::vector<size_t> order(V);
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return (*d)[a] > (*d)[b]; });
      for (size_t i = 0; i < k; ++i)
        if (std::find(support.begin(), support.end(), order[i]) == support.end()) support.push_back(order[i]);
    }
  }
  double sp = 0, sq = 0;
  for (size_t i : support) sp += p[i], sq += q[i];
  double js = 0;
  for (size_t i : support) {
    const double a = p[i] / sp, b = q[i] / sq, m = (a + b) / 2;
    if (a > 0) js += 0.5 * a * std::log(a / m);
    if (b > 0) js += 0.5 * b * std::log(b / m);
  }
  return js;
}

std::vector<double> row(const at::Tensor& t) {
  const at::Tensor c = t.contiguous().to(at::kDouble);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

TEST_CASE("js: zero for identical inputs, symmetric, at most ln 2") {
  at::Generator g = at::detail::createCPUGenerator(7);
  const at::Tensor p = at::softmax(at::randn({16, 50}, g, at::kDouble) * 3, -1);
  const at::Tensor q = at::softmax(at::randn({16, 50}, g, at::kDouble) * 3, -1);
  for (int64_t k : {0, 1, 10, 50}) {
    INFO("topk " << k);
    // identical rows: every term is p log(2p / 2p) = 0 but for a rounding of log(1 +- 1e-16)
    CHECK(js_divergence(p, p, k).abs().max().item<double>() < 1e-15);
    CHECK(js_divergence(p, q, k).equal(js_divergence(q, p, k)));
    CHECK(js_divergence(p, q, k).max().item<double>() <= std::log(2.0));
    CHECK(js_divergence(p, q, k).min().item<double>() > 0);
  }
  // disjoint supports reach the bound
  CHECK_THAT(js1({1, 0, 0}, {0, 0, 1}), WithinAbs(std::log(2.0), 1e-15));
  CHECK_THAT(js1({0.5, 0.5, 0}, {0, 0, 1}), WithinAbs(std::log(2.0), 1e-15));
}

TEST_CASE("js: hand-computed values") {
  // m = (1/4, 1/2, 1/4): KL(p||m) = KL(q||m) = ½ ln 2, so JS = ½ ln 2
  CHECK_THAT(js1({0.5, 0.5, 0}, {0, 0.5, 0.5}), WithinAbs(0.34657359027997264, 1e-15));
  // m = (½, ½): 0.8 ln 1.6 + 0.2 ln 0.4
  CHECK_THAT(js1({0.8, 0.2}, {0.2, 0.8}), WithinAbs(0.19274475702175753, 1e-15));
  CHECK_THAT(js1({0.4, 0.3, 0.2, 0.1}, {0.1, 0.2, 0.3, 0.4}), WithinAbs(0.1064401352862232, 1e-15));
  // unnormalised inputs are renormalised first
  CHECK_THAT(js1({4, 1}, {1, 4}), WithinAbs(0.19274475702175753, 1e-15));
}

TEST_CASE("js: top-k alignment takes the union of both top-k sets and renormalises") {
  // k = 1: support {0} ∪ {3}: (0.8, 0.2) against (0.2, 0.8)
  CHECK_THAT(js1({0.4, 0.3, 0.2, 0.1}, {0.1, 0.2, 0.3, 0.4}, 1), WithinAbs(0.19274475702175753, 1e-15));
  // k = 2: {0, 1} ∪ {3, 2} is the whole vocabulary
  CHECK_THAT(js1({0.4, 0.3, 0.2, 0.1}, {0.1, 0.2, 0.3, 0.4}, 2), WithinAbs(0.1064401352862232, 1e-15));
  // k = 2, overlapping sets {0, 1} ∪ {0, 2} = {0, 1, 2}: token 0 counted once
  CHECK_THAT(js1({0.5, 0.3, 0.1, 0.1}, {0.4, 0.1, 0.4, 0.1}, 2), WithinAbs(0.0857023535853852, 1e-15));
  // a token only one side ranks high still weighs, with the other side's mass there:
  // {0, 1} ∪ {0, 3}: (0.5, 0.3, 0) / 0.8 against (0.5, 0.2, 0.3)
  CHECK_THAT(js1({0.5, 0.3, 0.2, 0}, {0.5, 0.2, 0, 0.3}, 2), WithinAbs(0.12098027351896835, 1e-15));
  // k >= V is the whole vocabulary
  CHECK(js1({0.4, 0.3, 0.2, 0.1}, {0.1, 0.2, 0.3, 0.4}, 9) == js1({0.4, 0.3, 0.2, 0.1}, {0.1, 0.2, 0.3, 0.4}));
}

TEST_CASE("js: rows against the plain-loop reference") {
  at::Generator g = at::detail::createCPUGenerator(3);
  const at::Tensor p = at::softmax(at::randn({8, 40}, g, at::kDouble) * 2, -1);
  const at::Tensor q = at::softmax(at::randn({8, 40}, g, at::kDouble) * 2, -1);
  for (int64_t k : {0, 1, 3, 10, 39}) {
    const std::vector<double> got = row(js_divergence(p, q, k));
    for (int64_t i = 0; i < 8; ++i) {
      INFO("topk " << k << " row " << i);
      // double, <= 50 terms in another order: ~50 x 1.1e-16 at most
      CHECK_THAT(got[i], WithinAbs(reference_js(row(p[i]), row(q[i]), size_t(k)), 1e-14));
    }
  }
  // float inputs are computed in double
  CHECK_THAT(js_divergence(p.to(at::kFloat), q.to(at::kFloat), 10)[0].item<double>(),
             WithinAbs(reference_js(row(p[0]), row(q[0]), 10), 1e-7));
}

TEST_CASE("js from logits: the top-k support's softmax, in float32, against the reference") {
  at::Generator g = at::detail::createCPUGenerator(11);
  for (double scale : {0.5, 3.0, 12.0}) {
    const at::Tensor lp = at::randn({6, 300}, g, at::kDouble) * scale;
    const at::Tensor lq = lp + at::randn({6, 300}, g, at::kDouble) * scale * 0.3;
    for (int64_t k : {0, 1, 5, 10, 300}) {
      const std::vector<double> got = row(js_divergence_logits(lp.to(at::kFloat), lq.to(at::kFloat), k));
      for (int64_t i = 0; i < 6; ++i) {
        INFO("scale " << scale << " topk " << k << " row " << i);
        // the plain-loop reference on float64 probabilities of the same (float32-rounded)
        // logits; float32 log-sum-exp and logs of O(1) terms: a few ulps of 1.2e-7 each
        const std::vector<double> p = row(at::softmax(lp[i].to(at::kFloat).to(at::kDouble), -1));
        const std::vector<double> q = row(at::softmax(lq[i].to(at::kFloat).to(at::kDouble), -1));
        CHECK_THAT(got[i], WithinAbs(reference_js(p, q, size_t(k)), 2e-6));
      }
      // float64 logits stay float64: as close as the probability version
      const std::vector<double> g64 = row(js_divergence_logits(lp, lq, k));
      const std::vector<double> p64 = row(js_divergence(at::softmax(lp, -1), at::softmax(lq, -1), k));
      for (int64_t i = 0; i < 6; ++i) CHECK_THAT(g64[i], WithinAbs(p64[i], 1e-13));
    }
  }
  // identical logits: exactly 0; symmetric exactly; disjoint mass: ln 2
  const at::Tensor a = at::randn({4, 50}, g, at::kFloat) * 5, b = at::randn({4, 50}, g, at::kFloat) * 5;
  CHECK(js_divergence_logits(a, a, 10).abs().max().item<double>() == 0);
  CHECK(js_divergence_logits(a, b, 10).equal(js_divergence_logits(b, a, 10)));
  // nearly identical rows (logits 1e-3 apart): JS ~ 1e-7, kept to ~2% (the float32 rounding
  // of log p − log q, ~1e-6 against 1e-3, enters JS twice) where a difference of two logs
  // near ln 2 would be off by ~6e-8, half the value
  const at::Tensor c = a + 1e-3 * at::randn({4, 50}, g, at::kFloat);
  const std::vector<double> small = row(js_divergence_logits(a, c, 0));
  for (int64_t i = 0; i < 4; ++i) {
    const double ref = reference_js(row(at::softmax(a[i].to(at::kDouble), -1)),
                                    row(at::softmax(c[i].to(at::kDouble), -1)), 0);
    INFO("row " << i << " reference " << ref);
    CHECK(ref < 1e-6);
    CHECK_THAT(small[i], WithinRel(ref, 0.02));
  }
  CHECK_THAT(js_divergence_logits(at::tensor({30.0f, 0.0f}), at::tensor({0.0f, 30.0f})).item<double>(),
             WithinAbs(std::log(2.0), 1e-6));  // exp(-30) ~ 1e-13 of mass overlaps; fp32 rounds ln 2 by 6e-8
  // a -inf logit (zero probability) on one side counts as 0 · log 0
  CHECK_THAT(js_divergence_logits(at::tensor({0.0, -INFINITY}, at::kDouble), at::tensor({0.0, 0.0}, at::kDouble))
                 .item<double>(),
             WithinAbs(reference_js({1, 0}, {0.5, 0.5}, 0), 1e-15));
  diag_test::require_error([] { js_divergence_logits(at::zeros({2}), at::zeros({3})); }, {"js", "[2]", "[3]"});
}

TEST_CASE("js: errors say what is wrong") {
  diag_test::require_error([] { js1({0.5, 0.5}, {1, 0, 0}); }, {"js", "[2]", "[3]"});
  diag_test::require_error([] { js1({0.5, -0.5}, {1, 0}); }, {"non-negative", "p"});
  diag_test::require_error([] { js1({0.5, 0.5}, {0, 0}); }, {"q", "no probability mass"});
}

TEST_CASE("Ratio and ΔJS follow the formulas") {
  const std::vector<double> p = {0.1, 0.3, 0.3, 0.05};
  const std::vector<double> r = tp_ratio(p);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == std::fabs(0.3 - 0.1) / (0.3 + 1e-6));
  CHECK(r[1] == 0);
  CHECK(r[2] == std::fabs(0.05 - 0.3) / (0.05 + 1e-6));
  const std::vector<double> js = {0.6, 0.3, 0.3, 0.0};
  const std::vector<double> d = delta_js(js, true);
  REQUIRE(d.size() == 3);
  CHECK(d[0] == 0.3 / (0.6 + 1e-6));
  CHECK(d[1] == 0);
  CHECK(d[2] == 0.3 / (0.3 + 1e-6));
  // the stabiliser keeps a probability that vanishes finite
  CHECK(tp_ratio({0.5, 0.0})[0] == 0.5 / 1e-6);
  diag_test::require_error([] { tp_ratio({0.5}); }, {"tp_ratio", "2 residuals"});
}

TEST_CASE("ΔJS of the final block is undefined: left out unless asked for") {
  // JS[N] = 0 after the last block, so the final block's ΔJS is JS[N-1] / (JS[N-1] + eps) ≈ 1
  // whatever the model does: by default only blocks 0..N-2 have a ΔJS
  const std::vector<double> js = {0.6, 0.3, 0.3, 0.0};
  const std::vector<double> d = delta_js(js);
  REQUIRE(d.size() == 2);
  CHECK(d[0] == 0.3 / (0.6 + 1e-6));
  CHECK(d[1] == 0);
  CHECK(delta_js({0.2, 0.0}).empty());  // one block: no defined ΔJS
  CHECK(delta_js({0.2, 0.0}, true) == std::vector<double>{0.2 / (0.2 + 1e-6)});
  // S(b) with LS over blocks 0..N-2: tp = (0, 0, 1, 1), ls = (1, 0, 0) (block 3 undefined).
  // b = 2: LS(shallow) = (1 + 0)/2, TP(deep) = 1, TP(shallow) = 0, LS(deep) = ls[2] = 0
  const std::vector<double> tp = {0, 0, 1, 1}, ls = {1, 0, 0};
  CHECK(split_score(tp, ls, 2) == 0.5 + 1 - 0 - 0);
  // b = 1: 1 + 2/3 - 0 - (0 + 0)/2
  CHECK_THAT(split_score(tp, ls, 1), WithinAbs(1 + 2.0 / 3, 1e-15));
  // b = 3 would leave only the undefined block on the deep side
  diag_test::require_error([&] { split_score(tp, ls, 3); }, {"b = 3", "1..2", "undefined"});
  // so the splits lower such a b to N - 2: 2/3 of 4 = 2.67 -> 3 -> 2, the same as 1/2
  const auto s = split_scores(tp, ls, kDefaultRatios);
  REQUIRE(s.size() == 2);
  CHECK(s[0].b == 1);
  CHECK(s[1].b == 2);
  // with the final block included (the same ls plus a made-up 1 for block 3), b = 3 is allowed
  CHECK(split_scores(tp, {1, 0, 0, 1}, kDefaultRatios).back().b == 3);
  diag_test::require_error([&] { split_score(tp, {1, 0}, 1); }, {"LS has 2", "expected 4"});
}

TEST_CASE("normalise: min-max to [0, 1]") {
  CHECK(normalise({2, 4, 3}) == std::vector<double>{0, 1, 0.5});
  CHECK(normalise({7, 7}) == std::vector<double>{0, 0});
  diag_test::require_error([] { normalise({1, NAN}); }, {"layer 1", "not finite"});
}

TEST_CASE("split: b = round(rN) within 1..N-1") {
  // Table 9 of the paper: 1/3, 1/2, 2/3 of 28 layers are b = 9, 14, 19 (9.33, 14, 18.67)
  CHECK(kDefaultRatios == std::vector<double>{1.0 / 3, 0.5, 2.0 / 3});
  CHECK(split_layer(1.0 / 3, 28) == 9);
  CHECK(split_layer(1.0 / 2, 28) == 14);
  CHECK(split_layer(2.0 / 3, 28) == 19);
  // 36 layers (Qwen3-4B/8B): 12, 18, 24 exactly
  CHECK(split_layer(1.0 / 3, 36) == 12);
  CHECK(split_layer(1.0 / 2, 36) == 18);
  CHECK(split_layer(2.0 / 3, 36) == 24);
  // the old default 0.66 of 28 is 18.48: b = 18, not Table 9's 19
  CHECK(split_layer(0.66, 28) == 18);
  CHECK(split_layer(0.33, 28) == 9);
  // halves round up: 1/2 of 27 = 13.5 -> 14; 1/6 of 9 = 1.5 -> 2 (1/6 * 9 is 1.4999999999999998
  // in binary)
  CHECK(split_layer(0.5, 27) == 14);
  CHECK(split_layer(1.0 / 6, 9) == 2);
  CHECK(split_layer(0.5, 3) == 2);
  CHECK(split_layer(0.1, 4) == 1);
  CHECK(split_layer(0.99, 4) == 3);
  diag_test::require_error([] { split_layer(1.5, 4); }, {"ratio 1.5"});
  diag_test::require_error([] { split_layer(0.5, 1); }, {"1 layer"});
}

TEST_CASE("S(b) on synthetic profiles with a known answer") {
  // sensitive shallow half, task particle in the deep half: the split in the middle is best
  const std::vector<double> tp = {0, 0, 0, 1, 1, 1}, ls = {1, 1, 1, 0, 0, 0};
  CHECK(split_score(tp, ls, 3) == 2);
  // double sums of four numbers <= 1: a rounding or two of 1.1e-16
  CHECK_THAT(split_score(tp, ls, 1), WithinAbs(1 + 0.6 - 0 - 0.4, 1e-15));
  CHECK_THAT(split_score(tp, ls, 2), WithinAbs(1 + 0.75 - 0 - 0.25, 1e-15));
  const auto s = split_scores(tp, ls, {0.33, 0.5, 0.66});
  REQUIRE(s.size() == 3);
  CHECK(s[0].b == 2);
  CHECK(s[1].b == 3);
  CHECK(s[2].b == 4);
  CHECK(best_split(s).b == 3);
  CHECK(best_split(s).ratio == 0.5);
  // the reverse study scores negative everywhere
  for (const auto& x : split_scores(ls, tp, {0.33, 0.5, 0.66})) CHECK(x.score < 0);
  // a task particle in the last two layers and sensitivity in the first four: b = 4
  const std::vector<double> tp2 = {0, 0, 0, 0, 1, 1}, ls2 = {1, 1, 1, 1, 0, 0};
  CHECK(best_split(split_scores(tp2, ls2, {0.33, 0.5, 0.66})).b == 4);
  // ratios landing on the same b give one split
  CHECK(split_scores(tp, ls, {0.5, 0.51}).size() == 1);
  diag_test::require_error([&] { split_score(tp, ls, 6); }, {"b = 6", "1..5"});
}

TEST_CASE("recommendation follows the sign of S(b)") {
  const int N = 6;
  // some S(b) > 0: the highest; train shallow 0..b-1, freeze deep b..N-1
  Recommendation r = recommend({{1.0 / 3, 2, -0.2}, {0.5, 3, 0.7}, {2.0 / 3, 4, 0.1}}, N);
  CHECK(r.allocation == Allocation::TrainShallow);
  CHECK(r.split.b == 3);
  CHECK(r.split.score == 0.7);
  CHECK(r.train_first == 0);
  CHECK(r.train_last == 2);
  CHECK(r.freeze_first == 3);
  CHECK(r.freeze_last == 5);
  CHECK(std::string(allocation_name(r.allocation)) == "train_shallow");
  // the case, every S(b) < 0 (-0.66, -0.52, -1.51): the reverse allocation at the most
  // negative one, b = 3 of 4: train deep block 3, freeze 0..2
  r = recommend({{1.0 / 3, 1, -0.66}, {0.5, 2, -0.52}, {2.0 / 3, 3, -1.51}}, 4);
  CHECK(r.allocation == Allocation::TrainDeep);
  CHECK(r.split.b == 3);
  CHECK(r.train_first == 3);
  CHECK(r.train_last == 3);
  CHECK(r.freeze_first == 0);
  CHECK(r.freeze_last == 2);
  CHECK(std::string(allocation_name(r.allocation)) == "train_deep");
  // the highest at 0: neither allocation is favoured
  r = recommend({{0.5, 2, 0.0}, {2.0 / 3, 3, -0.3}}, 4);
  CHECK(r.allocation == Allocation::Neither);
  CHECK(r.split.b == 2);
  // end to end on the synthetic profiles: the reverse study recommends training deep
  const std::vector<double> tp = {0, 0, 0, 1, 1, 1}, ls = {1, 1, 1, 0, 0, 0};
  CHECK(recommend(split_scores(tp, ls, kDefaultRatios), N).allocation == Allocation::TrainShallow);
  r = recommend(split_scores(ls, tp, kDefaultRatios), N);
  CHECK(r.allocation == Allocation::TrainDeep);
  CHECK(r.split.b == 3);  // S = -(1 + 0.75 - 0.25) = -1.5 at b = 2 and 4, -2 at b = 3
  CHECK(r.split.score == -2);
}

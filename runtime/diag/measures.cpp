// runtime/diag/measures.cpp: JS on the aligned top-k support, Ratio, ΔJS, normalisation, S(b).
#include "runtime/diag/measures.h"

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "runtime/core/error.h"

namespace ltrun::diag {

namespace {

std::string shape(at::IntArrayRef s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// KL(a ‖ m) along the last dim with 0 · log 0 = 0 (m > 0 wherever a > 0)
at::Tensor kl(const at::Tensor& a, const at::Tensor& m) {
  const at::Tensor pos = a > 0;
  return at::where(pos, a * (a.log() - m.log()), at::zeros_like(a)).sum(-1);
}

}  // namespace

at::Tensor js_divergence(const at::Tensor& p_in, const at::Tensor& q_in, int64_t topk) {
  LT_CHECK(p_in.defined() && q_in.defined() && p_in.dim() >= 1 && p_in.sizes() == q_in.sizes(),
           "js: p and q must be probability tensors of one shape [..., vocab], got {} and {}",
           p_in.defined() ? shape(p_in.sizes()) : "none", q_in.defined() ? shape(q_in.sizes()) : "none");
  LT_CHECK(p_in.size(-1) > 0, "js: empty distributions (shape {})", shape(p_in.sizes()));
  at::Tensor p = p_in.detach().to(at::kDouble), q = q_in.detach().to(at::kDouble);
  LT_CHECK(p.ge(0).all().item<bool>() && q.ge(0).all().item<bool>(),
           "js: probabilities must be non-negative (a negative entry in {})",
           p.ge(0).all().item<bool>() ? "q" : "p");
  const int64_t V = p.size(-1);
  if (topk > 0 && topk < V) {
    // a mask over the whole vocabulary rather than gathered indices: the support and the
    // order of summation are then the same for (p, q) and (q, p), so JS is exactly symmetric
    const at::Tensor keep = at::zeros_like(p, at::kBool)
                                .scatter_(-1, std::get<1>(p.topk(topk, -1)), true)
                                .scatter_(-1, std::get<1>(q.topk(topk, -1)), true);
    p = p.masked_fill(keep.logical_not(), 0);
    q = q.masked_fill(keep.logical_not(), 0);
  }
  const at::Tensor ps = p.sum(-1, true), qs = q.sum(-1, true);
  LT_CHECK(ps.gt(0).all().item<bool>() && qs.gt(0).all().item<bool>(),
           "js: {} has no probability mass on the support (all zeros)",
           ps.gt(0).all().item<bool>() ? "q" : "p");
  p = p / ps;
  q = q / qs;
  const at::Tensor m = (p + q) * 0.5;
  return (0.5 * kl(p, m) + 0.5 * kl(q, m)).clamp_min(0);  // clamp: -1e-17 from rounding
}

std::vector<double> tp_ratio(const std::vector<double>& p) {
  LT_CHECK(p.size() >= 2, "tp_ratio: need P_t on at least 2 residuals (embeddings + a block), got {}",
           p.size());
  std::vector<double> r(p.size() - 1);
  for (size_t l = 0; l + 1 < p.size(); ++l) r[l] = std::fabs(p[l + 1] - p[l]) / (p[l + 1] + kEps);
  return r;
}

std::vector<double> delta_js(const std::vector<double>& js) {
  LT_CHECK(js.size() >= 2, "delta_js: need JS on at least 2 residuals (embeddings + a block), got {}",
           js.size());
  std::vector<double> d(js.size() - 1);
  for (size_t l = 0; l + 1 < js.size(); ++l) d[l] = std::fabs(js[l + 1] - js[l]) / (js[l] + kEps);
  return d;
}

std::vector<double> normalise(const std::vector<double>& v) {
  if (v.empty()) return v;
  for (size_t i = 0; i < v.size(); ++i)
    LT_CHECK(std::isfinite(v[i]), "normalise: value {} at layer {} is not finite", v[i], i);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double a = *lo, span = *hi - *lo;
  std::vector<double> out(v.size(), 0.0);
  if (span > 0)
    for (size_t i = 0; i < v.size(); ++i) out[i] = (v[i] - a) / span;
  return out;
}

int split_layer(double ratio, int n) {
  LT_CHECK(n >= 2, "split: a model of {} layer(s) has no split into shallow and deep", n);
  LT_CHECK(ratio > 0 && ratio < 1, "split: ratio {} must lie strictly between 0 and 1", ratio);
  return std::clamp(int(std::lround(ratio * n)), 1, n - 1);
}

double split_score(const std::vector<double>& tp, const std::vector<double>& ls, int b) {
  const int n = int(tp.size());
  LT_CHECK(ls.size() == tp.size(), "split_score: TP has {} layers, LS has {}", tp.size(), ls.size());
  LT_CHECK(b >= 1 && b <= n - 1, "split_score: b = {} out of range 1..{} (blocks 0..b-1 shallow)", b,
           n - 1);
  auto mean = [](const std::vector<double>& v, int from, int to) {
    double s = 0;
    for (int i = from; i < to; ++i) s += v[i];
    return s / (to - from);
  };
  return mean(ls, 0, b) + mean(tp, b, n) - mean(tp, 0, b) - mean(ls, b, n);
}

std::vector<Split> split_scores(const std::vector<double>& tp, const std::vector<double>& ls,
                                const std::vector<double>& ratios) {
  LT_CHECK(!ratios.empty(), "split_scores: no split ratios given");
  std::vector<Split> out;
  for (double r : ratios) {
    const int b = split_layer(r, int(tp.size()));
    if (std::none_of(out.begin(), out.end(), [b](const Split& s) { return s.b == b; }))
      out.push_back({r, b, split_score(tp, ls, b)});
  }
  return out;
}

const Split& best_split(const std::vector<Split>& s) {
  LT_CHECK(!s.empty(), "best_split: no splits");
  return *std::max_element(s.begin(), s.end(),
                           [](const Split& a, const Split& b) { return a.score < b.score; });
}

}  // namespace ltrun::diag

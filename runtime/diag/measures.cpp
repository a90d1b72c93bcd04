// runtime/diag/measures.cpp: JS on the aligned top-k support, Ratio, ΔJS, normalisation, S(b).
#include "runtime/diag/measures.h"

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

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

namespace {

// log(2a / (a + b)) from u = log b − log a: −log((1 + e^u) / 2). Near u = 0 (a ≈ b) as
// −log1p(expm1(u) / 2), which keeps its relative accuracy; above 1 as ln 2 − softplus(u),
// which does not overflow. u = −inf (b = 0) gives ln 2.
at::Tensor half_log_ratio(const at::Tensor& u) {
  const at::Tensor small = -at::log1p(at::expm1(u.clamp_max(1)) * 0.5);
  const at::Tensor large = std::log(2.0) - at::softplus(u.clamp_min(1));
  return at::where(u < 1, small, large);
}

}  // namespace

TopkUnion topk_union(const at::Tensor& a_ids, const at::Tensor& b_ids) {
  LT_CHECK(a_ids.sizes() == b_ids.sizes() && a_ids.dim() >= 1,
           "js: top-k id sets must have one shape [..., k], got {} and {}", shape(a_ids.sizes()),
           shape(b_ids.sizes()));
  const int64_t n = 2 * a_ids.size(-1);
  // the union as a sorted list of 2k indices; a repeat of its left neighbour is masked out,
  // so a token in both top-k sets counts once, and (p, q), (q, p) see the same support
  TopkUnion u;
  u.ids = std::get<0>(at::cat({a_ids, b_ids}, -1).sort(-1));
  u.valid = at::ones_like(u.ids, at::kBool);
  if (n > 1) u.valid.narrow(-1, 1, n - 1).copy_(u.ids.narrow(-1, 1, n - 1) != u.ids.narrow(-1, 0, n - 1));
  return u;
}

at::Tensor js_divergence_gathered(const at::Tensor& lp_in, const at::Tensor& lq_in,
                                  const at::Tensor& valid) {
  LT_CHECK(lp_in.defined() && lq_in.defined() && lp_in.dim() >= 1 && lp_in.sizes() == lq_in.sizes(),
           "js: p and q logits must be tensors of one shape [..., vocab], got {} and {}",
           lp_in.defined() ? shape(lp_in.sizes()) : "none", lq_in.defined() ? shape(lq_in.sizes()) : "none");
  LT_CHECK(lp_in.size(-1) > 0, "js: empty logits (shape {})", shape(lp_in.sizes()));
  const auto dtype = lp_in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor lp = lp_in.detach().to(dtype), lq = lq_in.detach().to(dtype);
  const double inf = std::numeric_limits<double>::infinity();
  if (valid.defined()) {
    lp = lp.masked_fill(valid.logical_not(), -inf);
    lq = lq.masked_fill(valid.logical_not(), -inf);
  }
  LT_CHECK(!(lp.isnan().any().item<bool>() || lq.isnan().any().item<bool>()), "js: logits hold NaN");
  const at::Tensor a = lp - lp.logsumexp(-1, true), b = lq - lq.logsumexp(-1, true);  // log p, log q
  const at::Tensor pa = a.exp(), pb = b.exp();
  // u: ±inf where one side has no mass there, NaN where neither has (a masked repeat): a
  // side without mass contributes no term (0 · log 0 = 0)
  const at::Tensor u = b - a, zero = at::zeros_like(a);
  const at::Tensor terms = at::where(pa > 0, pa * half_log_ratio(u), zero) +
                           at::where(pb > 0, pb * half_log_ratio(-u), zero);
  return (0.5 * terms.sum(-1)).clamp_min(0);
}

at::Tensor js_divergence_logits(const at::Tensor& lp, const at::Tensor& lq, int64_t topk) {
  LT_CHECK(lp.defined() && lq.defined() && lp.dim() >= 1 && lp.sizes() == lq.sizes(),
           "js: p and q logits must be tensors of one shape [..., vocab], got {} and {}",
           lp.defined() ? shape(lp.sizes()) : "none", lq.defined() ? shape(lq.sizes()) : "none");
  LT_CHECK(lp.size(-1) > 0, "js: empty logits (shape {})", shape(lp.sizes()));
  const int64_t V = lp.size(-1);
  if (topk <= 0 || topk >= V) return js_divergence_gathered(lp, lq, {});
  const TopkUnion u = topk_union(std::get<1>(lp.detach().topk(topk, -1, true, false)),
                                 std::get<1>(lq.detach().topk(topk, -1, true, false)));
  return js_divergence_gathered(lp.detach().gather(-1, u.ids), lq.detach().gather(-1, u.ids), u.valid);
}

std::vector<double> tp_ratio(const std::vector<double>& p) {
  LT_CHECK(p.size() >= 2, "tp_ratio: need P_t on at least 2 residuals (embeddings + a block), got {}",
           p.size());
  std::vector<double> r(p.size() - 1);
  for (size_t l = 0; l + 1 < p.size(); ++l) r[l] = std::fabs(p[l + 1] - p[l]) / (p[l + 1] + kEps);
  return r;
}

std::vector<double> delta_js(const std::vector<double>& js, bool include_final) {
  LT_CHECK(js.size() >= 2, "delta_js: need JS on at least 2 residuals (embeddings + a block), got {}",
           js.size());
  std::vector<double> d(js.size() - (include_final ? 1 : 2));
  for (size_t l = 0; l < d.size(); ++l) d[l] = std::fabs(js[l + 1] - js[l]) / (js[l] + kEps);
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
  // rounded to 1e-9 first: 2/3 * 36 may come out as 23.999999999999996, and a half that is a
  // half in exact arithmetic (1/2 of an odd N) must round up whatever its last bit
  const double x = std::round(ratio * n * 1e9) / 1e9;
  return std::clamp(int(std::floor(x + 0.5)), 1, n - 1);
}

double split_score(const std::vector<double>& tp, const std::vector<double>& ls, int b) {
  const int n = int(tp.size()), nl = int(ls.size());
  LT_CHECK(nl == n || nl == n - 1,
           "split_score: TP has {} blocks, LS has {} (expected {}, or {} without the final block)",
           n, nl, n, n - 1);
  LT_CHECK(b >= 1 && b <= nl - 1,
           "split_score: b = {} out of range 1..{} (blocks 0..b-1 shallow{})", b, nl - 1,
           nl < n ? "; the final block's ΔJS is undefined, so the deep side needs another block" : "");
  auto mean = [](const std::vector<double>& v, int from, int to) {
    double s = 0;
    for (int i = from; i < to; ++i) s += v[i];
    return s / (to - from);
  };
  return mean(ls, 0, b) + mean(tp, b, n) - mean(tp, 0, b) - mean(ls, b, nl);
}

std::vector<Split> split_scores(const std::vector<double>& tp, const std::vector<double>& ls,
                                const std::vector<double>& ratios) {
  LT_CHECK(!ratios.empty(), "split_scores: no split ratios given");
  LT_CHECK(ls.size() >= 2, "split_scores: LS has {} block(s); a split needs 2 (the final block's "
           "ΔJS, undefined, is not counted)", ls.size());
  std::vector<Split> out;
  for (double r : ratios) {
    const int b = std::min(split_layer(r, int(tp.size())), int(ls.size()) - 1);
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

Recommendation recommend(const std::vector<Split>& s, int n) {
  LT_CHECK(!s.empty(), "recommend: no splits");
  Recommendation r;
  const Split& hi = best_split(s);
  const Split& lo = *std::min_element(s.begin(), s.end(),
                                      [](const Split& a, const Split& b) { return a.score < b.score; });
  if (hi.score > 0) {
    r.allocation = Allocation::TrainShallow;
    r.split = hi;
  } else if (lo.score < 0 && hi.score < 0) {
    r.allocation = Allocation::TrainDeep;
    r.split = lo;
  } else {
    r.allocation = Allocation::Neither;
    r.split = hi;
  }
  const int b = r.split.b;
  LT_CHECK(b >= 1 && b <= n - 1, "recommend: split b = {} out of range 1..{}", b, n - 1);
  if (r.allocation == Allocation::TrainDeep) {
    r.train_first = b, r.train_last = n - 1, r.freeze_first = 0, r.freeze_last = b - 1;
  } else {
    r.train_first = 0, r.train_last = b - 1, r.freeze_first = b, r.freeze_last = n - 1;
  }
  return r;
}

const char* allocation_name(Allocation a) {
  switch (a) {
    case Allocation::TrainShallow: return "train_shallow";
    case Allocation::TrainDeep: return "train_deep";
    case Allocation::Neither: return "neither";
  }
  return "neither";
}

const Fields<Split>& split_fields() {
  static const Fields<Split> f = {{"ratio", &Split::ratio}, {"b", &Split::b}, {"score", &Split::score}};
  return f;
}

}  // namespace ltrun::diag

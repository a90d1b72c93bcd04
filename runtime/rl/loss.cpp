// runtime/rl/loss.cpp: group advantages, the clipped surrogate, k3 KL and aggregations.
#include "runtime/rl/loss.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>

#include "runtime/core/error.h"

namespace ltrun::rl {

AdvNorm parse_adv_norm(const std::string& s) {
  if (s == "std") return AdvNorm::Std;
  if (s == "none") return AdvNorm::None;
  fail("rl: advantage norm '{}': expected std or none", s);
}

std::vector<double> advantages(const std::vector<double>& r, int64_t G, AdvNorm norm, double eps) {
  LT_CHECK(G >= 1, "rl.advantages: group_size must be >= 1, got {}", G);
  LT_CHECK(r.size() % size_t(G) == 0,
           "rl.advantages: {} rewards are not a multiple of group_size {}", r.size(), G);
  LT_CHECK(norm == AdvNorm::None || G >= 2,
           "rl.advantages: norm \"std\" needs group_size >= 2 (the sample std of one reward is "
           "undefined); use norm \"none\"");
  std::vector<double> a(r.size());
  for (size_t g = 0; g < r.size(); g += size_t(G)) {
    double mean = 0;
    for (int64_t i = 0; i < G; ++i) mean += r[g + size_t(i)];
    mean /= double(G);
    double sd = 0;
    if (norm == AdvNorm::Std) {
      for (int64_t i = 0; i < G; ++i) sd += (r[g + size_t(i)] - mean) * (r[g + size_t(i)] - mean);
      sd = std::sqrt(sd / double(G - 1));
    }
    for (int64_t i = 0; i < G; ++i) {
      const double d = r[g + size_t(i)] - mean;
      a[g + size_t(i)] = norm == AdvNorm::Std ? d / (sd + eps) : d;
    }
  }
  return a;
}

Agg parse_agg(const std::string& s) {
  if (s == "token-mean") return Agg::TokenMean;
  if (s == "seq-mean-token-mean") return Agg::SeqMeanTokenMean;
  if (s == "seq-mean-token-sum-norm") return Agg::SeqMeanTokenSumNorm;
  fail("rl: aggregation '{}': expected token-mean, seq-mean-token-mean or seq-mean-token-sum-norm", s);
}

std::string agg_name(Agg a) {
  switch (a) {
    case Agg::TokenMean: return "token-mean";
    case Agg::SeqMeanTokenMean: return "seq-mean-token-mean";
    case Agg::SeqMeanTokenSumNorm: return "seq-mean-token-sum-norm";
  }
  return "?";
}

at::Tensor aggregate(const at::Tensor& l, const at::Tensor& mask, Agg agg, int64_t max_len,
                     double denom) {
  LT_CHECK(l.dim() == 2 && mask.sizes() == l.sizes(),
           "rl.aggregate: loss and mask must both be [B, T], got {} and {} dims", l.dim(), mask.dim());
  const at::Tensor m = mask.to(l.scalar_type());
  const at::Tensor lm = l * m;
  switch (agg) {
    case Agg::TokenMean: {
      const double n = denom > 0 ? denom : m.sum().item<double>();
      return lm.sum() / std::max(n, 1.0);
    }
    case Agg::SeqMeanTokenMean: {
      const at::Tensor per_row = lm.sum(1) / m.sum(1).clamp_min(1);
      return per_row.sum() / (denom > 0 ? denom : double(l.size(0)));
    }
    case Agg::SeqMeanTokenSumNorm: {
      LT_CHECK(max_len > 0, "rl.aggregate: seq-mean-token-sum-norm needs max_len > 0 (the constant "
                            "maximum response length)");
      return lm.sum() / ((denom > 0 ? denom : double(l.size(0))) * double(max_len));
    }
  }
  fail("rl.aggregate: unknown aggregation");
}

Preset preset(const std::string& algo) {
  if (algo == "grpo") return {AdvNorm::Std, Agg::TokenMean, 0.001};
  if (algo == "dr_grpo") return {AdvNorm::None, Agg::SeqMeanTokenSumNorm, 0.0};
  fail("rl: algo '{}': expected grpo or dr_grpo", algo);
}

PolicyLoss policy_loss(const at::Tensor& logp, const at::Tensor& old_logp, const at::Tensor& ref_logp,
                       const at::Tensor& adv, const at::Tensor& mask, const LossOptions& o) {
  LT_CHECK(logp.dim() == 2, "rl.policy_loss: logp must be [B, T], got {} dims", logp.dim());
  LT_CHECK(old_logp.sizes() == logp.sizes(), "rl.policy_loss: old_logp must have logp's shape [{}, {}]",
           logp.size(0), logp.size(1));
  LT_CHECK(mask.sizes() == logp.sizes(), "rl.policy_loss: mask must have logp's shape [{}, {}]",
           logp.size(0), logp.size(1));
  LT_CHECK(adv.dim() == 1 && adv.size(0) == logp.size(0),
           "rl.policy_loss: adv must be [B] with B = {}, got {} dims", logp.size(0), adv.dim());
  LT_CHECK(o.clip_low >= 0 && o.clip_low < 1 && o.clip_high >= 0,
           "rl.policy_loss: clip must be in [0, 1) and clip_high >= 0, got {} and {}", o.clip_low,
           o.clip_high);
  LT_CHECK(o.kl >= 0, "rl.policy_loss: kl must be >= 0, got {}", o.kl);
  LT_CHECK(o.kl == 0 || ref_logp.defined(), "rl.policy_loss: kl = {} needs ref_logp", o.kl);
  LT_CHECK(!ref_logp.defined() || ref_logp.sizes() == logp.sizes(),
           "rl.policy_loss: ref_logp must have logp's shape [{}, {}]", logp.size(0), logp.size(1));
  // fp32, or fp64 when logp is (gradient checks)
  const at::ScalarType dt = logp.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto opts = logp.options().dtype(dt);
  const at::Tensor lp = logp.to(dt);
  const at::Tensor m = mask.to(opts.device()).to(dt);
  const at::Tensor A = adv.to(opts.device()).to(dt).unsqueeze(1);
  const at::Tensor old = old_logp.to(opts.device()).to(dt);
  const at::Tensor ratio = at::exp(lp - old);
  const at::Tensor unclipped = -A * ratio;
  const at::Tensor clipped = -A * ratio.clamp(1 - o.clip_low, 1 + o.clip_high);
  const at::Tensor pg_tok = at::max(unclipped, clipped);  // = -min(rho A, clip(rho) A)
  PolicyLoss r;
  r.pg = aggregate(pg_tok, m, o.agg, o.max_len, o.denom);
  at::Tensor l = pg_tok;
  if (ref_logp.defined()) {
    const at::Tensor d = ref_logp.to(opts.device()).to(dt) - lp;
    const at::Tensor k3 = at::exp(d) - d - 1;
    r.kl = aggregate(k3, m, o.agg, o.max_len, o.denom);
    if (o.kl > 0) l = pg_tok + o.kl * k3;
  } else {
    r.kl = at::zeros({}, opts);
  }
  r.loss = aggregate(l, m, o.agg, o.max_len, o.denom);
  at::NoGradGuard no_grad;
  const double n = std::max(m.sum().item<double>(), 1.0);
  r.clip_frac = ((clipped > unclipped).to(dt) * m).sum().item<double>() / n;
  r.approx_kl = ((old - lp.detach()) * m).sum().item<double>() / n;
  r.ratio_mean = (ratio.detach() * m).sum().item<double>() / n;
  return r;
}

}  // namespace ltrun::rl

// runtime/rl/loss.h: the GRPO family of policy-gradient losses: group advantages, the
// per-token PPO ratio, the clipped surrogate with clip-higher, the k3 KL estimator to a
// reference, the three aggregations over the response mask, and the grpo / dr_grpo presets.
//
// Notation (tensors [B, T] over response tokens, mask m in {0, 1}):
//   rho    = exp(logp - old_logp)
//   pg_tok = -min(rho A, clip(rho, 1 - clip_low, 1 + clip_high) A)
//   k3_tok = exp(ref - logp) - (ref - logp) - 1
//   l      = pg_tok + kl * k3_tok
// and the loss is aggregate(l, m) with one of
//   token-mean               sum_{b,t} l m / sum m                    (veRL's default)
//   seq-mean-token-mean      mean_b (sum_t l m / sum_t m)
//   seq-mean-token-sum-norm  mean_b (sum_t l m) / max_len             (Dr. GRPO)
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ltrun::rl {

// How advantages are normalised within a group: "std" divides by the unbiased sample
// standard deviation plus eps (GRPO), "none" only subtracts the mean (Dr. GRPO).
enum class AdvNorm { Std, None };
AdvNorm parse_adv_norm(const std::string& s);  // "std" | "none"

// A_i = (r_i - mean_g r) / (std_g r + eps) for each group g of `group_size` consecutive
// rewards (std: unbiased, as torch.std); with AdvNorm::None A_i = r_i - mean_g r. A group
// whose rewards are all equal gets A = 0. rewards.size() must be a multiple of group_size;
// "std" needs group_size >= 2.
std::vector<double> advantages(const std::vector<double>& rewards, int64_t group_size,
                               AdvNorm norm = AdvNorm::Std, double eps = 1e-6);

enum class Agg { TokenMean, SeqMeanTokenMean, SeqMeanTokenSumNorm };
Agg parse_agg(const std::string& s);  // the names above
std::string agg_name(Agg a);

// aggregate(l, m) as above. max_len (> 0) is needed by seq-mean-token-sum-norm only. A row
// with an empty mask counts as 0 in seq-mean-token-mean; an all-empty mask gives 0 for
// token-mean. Differentiable in l.
// denom > 0 replaces the batch's own divisor (sum m for token-mean, B for the seq-mean
// forms), so that the losses of micro-batches add up to the loss of their mini-batch.
at::Tensor aggregate(const at::Tensor& l, const at::Tensor& mask, Agg agg, int64_t max_len = 0,
                     double denom = 0);

struct LossOptions {
  double clip_low = 0.2, clip_high = 0.2;  // epsilon_low, epsilon_high (clip-higher: high > low)
  double kl = 0.0;                         // beta, the k3 coefficient; 0: no reference needed
  Agg agg = Agg::TokenMean;
  int64_t max_len = 0;                     // L of seq-mean-token-sum-norm
  double denom = 0;                        // aggregate()'s divisor override (micro-batches)
};

// The settings of a named algorithm: grpo = std advantages, token-mean, kl 0.001 (the
// paper's Table 8); dr_grpo = mean-only advantages, seq-mean-token-sum-norm, kl 0.
struct Preset {
  AdvNorm norm;
  Agg agg;
  double kl;
};
Preset preset(const std::string& algo);

struct PolicyLoss {
  at::Tensor loss;  // aggregate(pg_tok + kl * k3_tok): a graph through logp
  at::Tensor pg;    // aggregate(pg_tok)
  at::Tensor kl;    // aggregate(k3_tok) (0 when no reference is given)
  double clip_frac = 0;  // masked token fraction where the clipped term is the larger loss
  double approx_kl = 0;  // masked token mean of old_logp - logp (veRL's ppo_kl)
  double ratio_mean = 0; // masked token mean of rho
};

// logp (a graph), old_logp, ref_logp and mask are [B, T]; adv is [B] (one per sequence).
// ref_logp may be undefined when kl == 0.
PolicyLoss policy_loss(const at::Tensor& logp, const at::Tensor& old_logp,
                       const at::Tensor& ref_logp, const at::Tensor& adv, const at::Tensor& mask,
                       const LossOptions& o);

}  // namespace ltrun::rl

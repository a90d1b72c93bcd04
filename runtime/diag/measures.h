// runtime/diag/measures.h: the numbers of a LayerTracer study, apart from any model: JS
// divergence on an aligned top-k support, the Task-Particle ratio, the relative JS jump of
// Layer-wise Sensitivity, normalised profiles and the split score S(b).
//
// Series along the residual stream follow the model's convention: entry r is measured on
// hidden[r] (r = 0: the embeddings, r = l + 1: after block l), so N blocks give N + 1 entries;
// per-block values (Ratio, ΔJS, profiles) have N entries, entry l for block l.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun::diag {

constexpr double kEps = 1e-6;  // the paper's stabiliser in Ratio and ΔJS

// JS(p ‖ q) = ½ KL(p ‖ m) + ½ KL(q ‖ m), m = (p + q) / 2, natural logs, along the last
// dimension: p, q [..., V] non-negative → [...] float64, each in [0, ln 2].
// Support: 0 < topk < V aligns the two top-k sets by taking their union U = topk(p) ∪ topk(q)
// (k to 2k tokens, each once); p and q are both restricted to U and renormalised to sum 1 on
// it, so both are distributions over the same tokens and the bound ln 2 holds. A token that
// only one of them ranks high still counts, with the other's own (small) mass there.
// topk <= 0 or >= V: the whole vocabulary (each input still renormalised).
at::Tensor js_divergence(const at::Tensor& p, const at::Tensor& q, int64_t topk = 0);

// The same JS from logits, as the scan computes it: p = softmax(lp), q = softmax(lq) along the
// last dimension, on the same support (topk(lp) ∪ topk(lq), the top-k of a softmax being the
// top-k of its logits). Restricting a softmax to U and renormalising is the softmax of the
// logits gathered on U, so only 2k logits per row are read after the two top-k: no
// full-vocabulary probability pass. Computed in float32 (float64 inputs stay float64) with a
// stable log-sum-exp; each term log(2p / (p + q)) is -log1p(expm1(log q − log p) / 2), exact
// to rounding when p ≈ q, so identical logits give exactly 0. lp, lq [..., V] → [...] float.
at::Tensor js_divergence_logits(const at::Tensor& lp, const at::Tensor& lq, int64_t topk = 0);
// js_divergence_logits in parts, for logits read only where needed. topk_union: the support
// of two top-k id sets [..., k] as sorted ids [..., 2k], `valid` false on each repeat of its
// left neighbour (a token in both sets counts once). js_divergence_gathered: JS of the
// softmaxes of lp and lq [..., S] restricted to `valid` [..., S] (undefined: every entry).
struct TopkUnion {
  at::Tensor ids, valid;
};
TopkUnion topk_union(const at::Tensor& a_ids, const at::Tensor& b_ids);
at::Tensor js_divergence_gathered(const at::Tensor& lp, const at::Tensor& lq, const at::Tensor& valid);

// Task Particle: Ratio[l] = |P_t[l+1] − P_t[l]| / (P_t[l+1] + eps) over the residual series
// P_t[0..N]: how much block l changed the target's probability, relative to where it lands.
std::vector<double> tp_ratio(const std::vector<double>& p_target);
// Layer-wise Sensitivity: ΔJS[l] = |JS[l+1] − JS[l]| / (JS[l] + eps) over the residual series
// JS[0..N] (JS[r]: context zeroed in hidden[r]), the relative jump between zeroing before and
// after block l.
// The final block's ΔJS is undefined (the paper's definition): zeroing the context after the
// last block cannot reach the last token, so JS[N] = 0 by construction and ΔJS[N−1] would be
// JS[N−1] / (JS[N−1] + eps) ≈ 1 for every sample, whatever the model does. By default it is
// left out: N − 1 entries (blocks 0..N−2; none for a 1-block model); include_final = true
// gives all N.
std::vector<double> delta_js(const std::vector<double>& js, bool include_final = false);

// Min-max normalisation to [0, 1] (a flat series becomes all 0), so that two profiles of
// different scales weigh equally in S(b).
std::vector<double> normalise(const std::vector<double>& v);

// The paper's split ratios (Table 9: b = 9 / 14 / 19 of 28 layers).
inline const std::vector<double> kDefaultRatios = {1.0 / 3, 1.0 / 2, 2.0 / 3};

// Split after b blocks: blocks 0..b-1 are shallow, b..N-1 deep. b = round(ratio * N), halves
// rounded up, kept in 1..N-1 so that both sides hold a block. This is the rule that gives
// Table 9's 9 / 14 / 19 for 1/3, 1/2, 2/3 of 28 (9.33, 14, 18.67); floor would give 18 and
// ceil 10. ratio * N is rounded to 1e-9 first, so 1/3 of 36 is 12 whatever the last bit.
int split_layer(double ratio, int n_layers);
// S(b) = mean LS(shallow) + mean TP(deep) − mean TP(shallow) − mean LS(deep): high when the
// sensitive layers are shallow and the task executes deep (train shallow, freeze deep).
// tp has N entries (blocks 0..N-1); ls has N, or N − 1 when the final block's ΔJS is left out
// (see delta_js): then LS(deep) is the mean over blocks b..N−2, and b must be ≤ N − 2.
double split_score(const std::vector<double>& tp, const std::vector<double>& ls, int b);

struct Split {
  double ratio;
  int b;
  double score;
};
const Fields<Split>& split_fields();  // by key (runtime/core/fields.h): ratio, b, score
// One Split per distinct b, in the order of `ratios`. b = split_layer(ratio, N), lowered to
// N − 2 when ls leaves out the final block (the deep side then still has an LS value).
std::vector<Split> split_scores(const std::vector<double>& tp, const std::vector<double>& ls,
                                const std::vector<double>& ratios);
// The highest score (the first on ties).
const Split& best_split(const std::vector<Split>& splits);

// What the split scores recommend, by the sign of S(b) (the paper's Appendix C.2):
//   TrainShallow: some S(b) > 0; the highest one: train blocks 0..b-1, freeze b..N-1;
//   TrainDeep:    every S(b) < 0, the reverse allocation is favoured; the lowest (most
//                 negative) one: train blocks b..N-1, freeze 0..b-1;
//   Neither:      no S(b) > 0 and some S(b) = 0; split is the highest one.
enum class Allocation { TrainShallow, TrainDeep, Neither };
struct Recommendation {
  Allocation allocation = Allocation::Neither;
  Split split{};
  // blocks [first, last] trained and frozen, for n_layers blocks
  int train_first = 0, train_last = 0, freeze_first = 0, freeze_last = 0;
};
Recommendation recommend(const std::vector<Split>& splits, int n_layers);
const char* allocation_name(Allocation a);  // "train_shallow" | "train_deep" | "neither"

}  // namespace ltrun::diag

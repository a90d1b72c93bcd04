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

// Task Particle: Ratio[l] = |P_t[l+1] − P_t[l]| / (P_t[l+1] + eps) over the residual series
// P_t[0..N]: how much block l changed the target's probability, relative to where it lands.
std::vector<double> tp_ratio(const std::vector<double>& p_target);
// Layer-wise Sensitivity: ΔJS[l] = |JS[l+1] − JS[l]| / (JS[l] + eps) over the residual series
// JS[0..N] (JS[r]: context zeroed in hidden[r]), the relative jump between zeroing before and
// after block l.
std::vector<double> delta_js(const std::vector<double>& js);

// Min-max normalisation to [0, 1] (a flat series becomes all 0), so that two profiles of
// different scales weigh equally in S(b).
std::vector<double> normalise(const std::vector<double>& v);

// Split after b blocks: blocks 0..b-1 are shallow, b..N-1 deep. b = round(ratio * N), kept
// in 1..N-1 so that both sides hold a block.
int split_layer(double ratio, int n_layers);
// S(b) = mean LS(shallow) + mean TP(deep) − mean TP(shallow) − mean LS(deep): high when the
// sensitive layers are shallow and the task executes deep (train shallow, freeze deep).
double split_score(const std::vector<double>& tp, const std::vector<double>& ls, int b);

struct Split {
  double ratio;
  int b;
  double score;
};
// One Split per distinct b, in the order of `ratios`.
std::vector<Split> split_scores(const std::vector<double>& tp, const std::vector<double>& ls,
                                const std::vector<double>& ratios);
// The highest score (the first on ties).
const Split& best_split(const std::vector<Split>& splits);

}  // namespace ltrun::diag

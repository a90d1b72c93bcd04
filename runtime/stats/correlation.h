// runtime/stats/correlation.h: rank and linear correlation of paired samples with their
// two-sided p-values, as layer-ranking studies report them (Spearman's rho between the layer
// rankings of two scans, Pearson's r between two score profiles).
//
// Definitions (those of scipy.stats.rankdata / pearsonr / spearmanr):
//   rank(a)[i]   1-based rank of a[i]; tied values share the average of the ranks they span
//                ({10, 20, 20, 30} → {1, 2.5, 2.5, 4}).
//   pearson r    Σ(a−ā)(b−b̄) / sqrt(Σ(a−ā)² Σ(b−b̄)²)
//   spearman ρ   pearson r of rank(a) and rank(b) (so ties count as average ranks)
//   p-value      two-sided, from t = r·sqrt((n−2)/(1−r²)) with n−2 degrees of freedom:
//                p = P(|T| ≥ |t|) = I_{ν/(ν+t²)}(ν/2, 1/2), ν = n − 2.
// Undefined cases give NaN rather than an error, so that a study can report them: r when a
// sample is constant, p when n < 3. |r| = 1 gives p = 0.
#pragma once
#include <vector>

namespace ltrun::stats {

struct Correlation {
  double r = 0;  // the coefficient
  double p = 0;  // two-sided p-value (NaN when undefined)
  int n = 0;     // number of pairs
};

// Errors (naming the argument and index) on NaN or infinite values; `what` prefixes them.
std::vector<double> rank(const std::vector<double>& a, const char* what = "rank");
Correlation pearson(const std::vector<double>& a, const std::vector<double>& b, const char* what = "pearson");
Correlation spearman(const std::vector<double>& a, const std::vector<double>& b, const char* what = "spearman");

// The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1 (a continued
// fraction evaluated by the modified Lentz method, relative accuracy ~1e-14).
double incomplete_beta(double a, double b, double x);
// P(|T| ≥ |t|) for Student's t with `dof` > 0 degrees of freedom.
double t_two_sided_p(double t, double dof);

// The exact two-sided sign test (McNemar's exact test when `up` and `down` are the discordant
// pairs of a paired comparison: items right only after, right only before): with n = up + down
// and X ~ Binomial(n, 1/2), p = min(1, 2 P(X ≤ min(up, down))); 1 when n = 0. Counts must be
// >= 0 (an error naming them otherwise).
double sign_test_p(long up, long down);

}  // namespace ltrun::stats

// runtime/stats/correlation.cpp: ranks, Pearson and Spearman with t-test p-values, and the
// regularized incomplete beta function they need (see correlation.h).
#include "runtime/stats/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/core/error.h"

namespace ltrun::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_finite(const std::vector<double>& a, const char* what, const char* arg) {
  for (size_t i = 0; i < a.size(); i++)
    LT_CHECK(std::isfinite(a[i]), "{}: {}[{}] is {}; expected finite numbers", what, arg, i + 1, a[i]);
}

void check_pairs(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  LT_CHECK(a.size() == b.size(), "{}: the samples differ in length ({} and {} values)", what,
           a.size(), b.size());
  LT_CHECK(a.size() >= 2, "{}: needs at least 2 pairs, got {}", what, a.size());
  check_finite(a, what, "a");
  check_finite(b, what, "b");
}

// The continued fraction of I_x(a, b) (converges fast for x < (a + 1) / (a + b + 2)):
//   I_x(a,b) = x^a (1−x)^b / (a B(a,b)) · 1 / (1 + d1 / (1 + d2 / (1 + ...)))
//   d_{2m+1} = −(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),  d_{2m} = m(b−m) x / ((a+2m−1)(a+2m))
// evaluated front to back by the modified Lentz method (tiny guards against zero divisors).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);  // the first term, d1, folded in
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= 10000; m++) {
    for (int odd = 0; odd < 2; odd++) {
      const double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      if (std::fabs(d) < tiny) d = tiny;
      c = 1 + num / c;
      if (std::fabs(c) < tiny) c = tiny;
      d = 1 / d;
      const double delta = c * d;
      f *= delta;
      if (odd && std::fabs(delta - 1) < eps) return f;
    }
  }
  fail("incomplete_beta({}, {}, {}): the continued fraction did not converge", a, b, x);
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  LT_CHECK(a > 0 && b > 0, "incomplete_beta: a = {} and b = {} must be positive", a, b);
  LT_CHECK(x >= 0 && x <= 1, "incomplete_beta: x = {} is outside [0, 1]", x);
  if (x == 0 || x == 1) return x;
  // log of x^a (1−x)^b / B(a, b)
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;  // I_x(a,b) = 1 − I_{1−x}(b,a)
}

double t_two_sided_p(double t, double dof) {
  LT_CHECK(dof > 0, "t_two_sided_p: {} degrees of freedom; expected > 0", dof);
  if (std::isnan(t)) return kNaN;
  if (std::isinf(t)) return 0;
  return incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
}

std::vector<double> rank(const std::vector<double>& a, const char* what) {
  check_finite(a, what, "a");
  std::vector<size_t> order(a.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return a[i] < a[j]; });
  std::vector<double> r(a.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && a[order[j + 1]] == a[order[i]]) j++;
    const double avg = (double(i) + double(j)) / 2 + 1;  // ranks i+1 .. j+1
    for (size_t k = i; k <= j; k++) r[order[k]] = avg;
    i = j + 1;
  }
  return r;
}

Correlation pearson(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  check_pairs(a, b, what);
  const size_t n = a.size();
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / double(n);
  const double mb = std::accumulate(b.begin(), b.end(), 0.0) / double(n);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; i++) {
    const double da = a[i] - ma, db = b[i] - mb;
    sab += da * db;
    saa += da * da;
    sbb += db * db;
  }
  Correlation c;
  c.n = int(n);
  if (saa == 0 || sbb == 0) {  // a constant sample: no correlation is defined
    c.r = c.p = kNaN;
    return c;
  }
  c.r = std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
  if (n < 3) {
    c.p = kNaN;
    return c;
  }
  const double dof = double(n) - 2;
  const double one_minus = 1 - c.r * c.r;
  c.p = one_minus <= 0 ? 0.0 : t_two_sided_p(c.r * std::sqrt(dof / one_minus), dof);
  return c;
}

Correlation spearman(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  check_pairs(a, b, what);
  return pearson(rank(a, what), rank(b, what), what);
}

double sign_test_p(long up, long down) {
  LT_CHECK(up >= 0 && down >= 0, "sign_test_p: counts must be >= 0, got up {} and down {}", up, down);
  const long n = up + down, k = std::min(up, down);
  if (n == 0) return 1.0;
  // P(X <= k) = sum_j C(n, j) / 2^n, each term in log space (n may be in the thousands)
  double tail = 0;
  for (long j = 0; j <= k; ++j)
    tail += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(j) + 1) - std::lgamma(double(n - j) + 1) -
                     double(n) * std::log(2.0));
  return std::min(1.0, 2 * tail);
}

}  // namespace ltrun::stats

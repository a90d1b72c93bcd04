// tests/stats/test_stats.cpp: ranks, Pearson and Spearman with p-values, and the incomplete
// beta function, against values derived by hand (closed forms noted per case) and against
// scipy 1.10 (scipy.stats.rankdata / pearsonr / spearmanr, scipy.special.betainc, run offline
// with Debian's python3-scipy; the numbers are pasted here so CI needs no scipy).
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/core/error.h"
#include "runtime/stats/correlation.h"

using namespace ltrun::stats;
using V = std::vector<double>;

TEST_CASE("rank: 1-based, ties share the average rank") {
  CHECK(rank({10, 20, 20, 30}) == V{1, 2.5, 2.5, 4});
  CHECK(rank({3, 2, 1}) == V{3, 2, 1});
  CHECK(rank({5, 5, 5}) == V{2, 2, 2});  // ranks 1..3 averaged
  // scipy.stats.rankdata([3,1,4,1,5,9,2,6,5,3,5])
  CHECK(rank({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}) == V{4.5, 1.5, 6, 1.5, 8, 11, 3, 10, 8, 4.5, 8});
  CHECK(rank({}).empty());
  CHECK_THROWS_WITH(rank({1, NAN}), Catch::Contains("a[2]"));
}

TEST_CASE("incomplete beta against closed forms and scipy.special.betainc") {
  CHECK(incomplete_beta(1, 1, 0.25) == Approx(0.25).epsilon(1e-13));  // I_x(1,1) = x
  // I_x(1/2,1/2) = (2/pi) asin(sqrt x)
  CHECK(incomplete_beta(0.5, 0.5, 0.3) == Approx(2 / M_PI * std::asin(std::sqrt(0.3))).epsilon(1e-12));
  // I_x(2,3) = sum_{j=2..4} C(4,j) x^j (1-x)^(4-j) at x = 0.4: 0.3456 + 0.1536 + 0.0256
  CHECK(incomplete_beta(2, 3, 0.4) == Approx(0.5248).epsilon(1e-12));
  CHECK(incomplete_beta(13, 0.5, 0.9) == Approx(0.1011275131894332).epsilon(1e-11));
  CHECK(incomplete_beta(100, 0.5, 0.99) == Approx(0.15677586542443941).epsilon(1e-11));
  CHECK(incomplete_beta(5, 2, 0.95) == Approx(0.9672261718749999).epsilon(1e-12));
  CHECK(incomplete_beta(3, 4, 0) == 0);
  CHECK(incomplete_beta(3, 4, 1) == 1);
  CHECK_THROWS_AS(incomplete_beta(0, 1, 0.5), ltrun::Error);
  CHECK_THROWS_AS(incomplete_beta(1, 1, 1.5), ltrun::Error);
}

TEST_CASE("two-sided t p-values: hand forms for 1 and 3 dof, scipy for others") {
  // nu = 1 (Cauchy): p = 1 - (2/pi) atan|t|
  CHECK(t_two_sided_p(0.5, 1) == Approx(1 - 2 / M_PI * std::atan(0.5)).epsilon(1e-12));
  // nu = 3: p = 1 - (2/pi) (atan(u) + u / (1 + u^2)), u = t / sqrt 3
  const double u = 2.0 / std::sqrt(3.0);
  CHECK(t_two_sided_p(2.0, 3) == Approx(1 - 2 / M_PI * (std::atan(u) + u / (1 + u * u))).epsilon(1e-12));
  CHECK(t_two_sided_p(2.0, 5) == Approx(0.10193947882985828).epsilon(1e-11));  // 2*t.sf(2,5)
  CHECK(t_two_sided_p(-2.0, 5) == Approx(0.10193947882985828).epsilon(1e-11));
  CHECK(t_two_sided_p(10, 26) == Approx(2.1200708779923734e-10).epsilon(1e-9));
  CHECK(t_two_sided_p(1.96, 1000) == Approx(0.05027318495574871).epsilon(1e-11));
  CHECK(t_two_sided_p(0, 7) == 1);
}

TEST_CASE("spearman and pearson by hand") {
  // d = rank differences {-1, 1, -1, 1, 0}: rho = 1 - 6*4/(5*24) = 0.8; here the data are
  // their own ranks, so pearson r is 0.8 too. t = 0.8*sqrt(3/0.36); nu = 3 as above.
  const V a{1, 2, 3, 4, 5}, b{2, 1, 4, 3, 5};
  const double t = 0.8 * std::sqrt(3 / 0.36), u = t / std::sqrt(3.0);
  const double p = 1 - 2 / M_PI * (std::atan(u) + u / (1 + u * u));  // = 0.10408803866...
  auto s = spearman(a, b);
  CHECK(s.r == Approx(0.8).epsilon(1e-14));
  CHECK(s.p == Approx(p).epsilon(1e-12));
  CHECK(s.p == Approx(0.10408803866182788).epsilon(1e-12));  // scipy
  CHECK(s.n == 5);
  auto r = pearson(a, b);
  CHECK(r.r == Approx(0.8).epsilon(1e-14));
  CHECK(r.p == Approx(p).epsilon(1e-12));
  // n = 3, r = 1/2: t = 1/sqrt 3, nu = 1, p = 1 - (2/pi)(pi/6) = 2/3
  auto q = pearson({1, 2, 3}, {1, 3, 2});
  CHECK(q.r == Approx(0.5).epsilon(1e-14));
  CHECK(q.p == Approx(2.0 / 3).epsilon(1e-12));
  // a monotone, non-linear relation: rho = 1 exactly, p = 0; r < 1
  auto m = spearman({1, 2, 3, 4}, {1, 4, 9, 100});
  CHECK(m.r == 1);
  CHECK(m.p == 0);
  CHECK(pearson({1, 2, 3, 4}, {1, 4, 9, 100}).r < 0.9);
  CHECK(spearman({1, 2, 3, 4}, {4, 3, 2, 1}).r == -1);
}

TEST_CASE("spearman and pearson against scipy, ties included") {
  const V a{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5}, b{2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4};
  auto s = spearman(a, b);
  CHECK(s.r == Approx(0.1384567651467695).epsilon(1e-12));
  CHECK(s.p == Approx(0.6847503048108998).epsilon(1e-11));
  auto r = pearson(a, b);
  CHECK(r.r == Approx(0.09422924859889797).epsilon(1e-12));
  CHECK(r.p == Approx(0.782872102218333).epsilon(1e-11));
  // every value tied in pairs
  auto t = spearman({1, 1, 2, 2, 3, 3, 4, 4}, {1, 2, 1, 2, 3, 4, 3, 4});
  CHECK(t.r == Approx(0.8).epsilon(1e-13));
  CHECK(t.p == Approx(0.01711999999999998).epsilon(1e-10));
  // 28 "layers": numpy.random.default_rng(7), x ~ N(0,1), y = 0.6 x + N(0,1), rounded to 1e-6
  const V x{0.00123, 0.298746, -0.274138, -0.890592, -0.454671, -0.991647, 0.060144, 1.340215,
            -0.492207, -0.620475, 0.489842, 0.356887, 0.105414, -0.930468, -0.029252, 0.695303,
            -1.344215, -0.457616, -1.901223, -1.289538, -1.841735, -0.235091, -1.267446,
            0.271264, 0.156751, -0.186931, -2.51676, -0.538693};
  const V y{-0.047763, 0.292556, -1.694618, -1.012108, -1.251322, -1.403825, 1.096985, -0.003406,
            -0.327846, 0.512105, -0.289695, 0.10243, 0.173713, -0.494499, -1.242607, 0.493322,
            0.552295, -1.821714, -0.281351, -0.654369, -1.746511, 1.859362, 0.001792, -1.03653,
            0.168567, 0.464531, -1.698838, 0.359695};
  auto sx = spearman(x, y);
  CHECK(sx.r == Approx(0.33004926108374383).epsilon(1e-12));
  CHECK(sx.p == Approx(0.08629505356382869).epsilon(1e-10));
  auto px = pearson(x, y);
  CHECK(px.r == Approx(0.37506468532245024).epsilon(1e-12));
  CHECK(px.p == Approx(0.0492250723601153).epsilon(1e-10));
}

TEST_CASE("undefined cases are NaN; bad input is an error naming it") {
  auto c = pearson({1, 1, 1}, {1, 2, 3});  // constant sample
  CHECK(std::isnan(c.r));
  CHECK(std::isnan(c.p));
  auto two = pearson({1, 2}, {2, 1});  // n = 2: r = -1, no degrees of freedom for p
  CHECK(two.r == -1);
  CHECK(std::isnan(two.p));
  CHECK_THROWS_WITH(pearson({1, 2, 3}, {1, 2}), Catch::Contains("3 and 2"));
  CHECK_THROWS_WITH(spearman({1}, {1}), Catch::Contains("at least 2"));
  CHECK_THROWS_WITH(spearman({1, 2, INFINITY}, {1, 2, 3}), Catch::Contains("a[3]"));
  CHECK_THROWS_WITH(spearman({1, 2, 3}, {1, NAN, 3}, "lt.stats.spearman"),
                    Catch::Contains("lt.stats.spearman: b[2]"));
}

TEST_CASE("sign test (exact McNemar): two-sided binomial tails by hand") {
  // n = 15, k = 2: P(X <= 2) = (1 + 15 + 105) / 2^15
  CHECK(sign_test_p(2, 13) == Approx(2.0 * 121 / 32768).epsilon(1e-12));
  CHECK(sign_test_p(13, 2) == Approx(2.0 * 121 / 32768).epsilon(1e-12));
  CHECK(sign_test_p(0, 5) == Approx(2.0 / 32).epsilon(1e-12));   // 2 * (1/2)^5
  CHECK(sign_test_p(7, 0) == Approx(2.0 / 128).epsilon(1e-12));
  CHECK(sign_test_p(10, 11) == 1.0);  // P(X <= 10) = 1/2 for n = 21: 2 x 1/2, capped at 1
  CHECK(sign_test_p(3, 3) == 1.0);
  CHECK(sign_test_p(0, 0) == 1.0);
  // n = 10, k = 1: (1 + 10) / 1024
  CHECK(sign_test_p(1, 9) == Approx(2.0 * 11 / 1024).epsilon(1e-12));
  CHECK_THROWS_WITH(sign_test_p(-1, 3), Catch::Contains("up -1"));
}

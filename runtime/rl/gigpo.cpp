// runtime/rl/gigpo.cpp: GiGPO's episode and anchor-state step advantages (see gigpo.h).
#include "runtime/rl/gigpo.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "runtime/core/error.h"

namespace ltrun::rl {

const Fields<GigpoOptions>& gigpo_option_fields() {
  static const Fields<GigpoOptions> f = {
      {"gamma", &GigpoOptions::gamma},
      {"omega", &GigpoOptions::omega},
      {"eps", &GigpoOptions::eps},
  };
  return f;
}

namespace {

void check_options(const GigpoOptions& o) {
  LT_CHECK(o.gamma >= 0 && o.gamma <= 1, "rl.gigpo: gamma must be in [0, 1], got {}", o.gamma);
  LT_CHECK(std::isfinite(o.omega), "rl.gigpo: omega must be a finite number, got {}", o.omega);
  LT_CHECK(o.eps >= 0 && std::isfinite(o.eps), "rl.gigpo: eps must be a finite number >= 0, got {}", o.eps);
}

void check_group(const std::vector<Episode>& group, AdvNorm norm) {
  LT_CHECK(!group.empty(), "rl.gigpo: the group has no episodes");
  LT_CHECK(norm == AdvNorm::None || group.size() >= 2,
           "rl.gigpo: norm \"std\" needs at least 2 episodes in the group (the sample std of one "
           "return is undefined); use norm \"none\"");
  for (size_t i = 0; i < group.size(); ++i) {
    const Episode& e = group[i];
    LT_CHECK(!e.rewards.empty() || !e.anchors.empty(), "rl.gigpo: episode {} has no steps", i + 1);
    LT_CHECK(e.anchors.size() == e.rewards.size(),
             "rl.gigpo: episode {} has {} anchors but {} rewards (one of each per step)", i + 1,
             e.anchors.size(), e.rewards.size());
    for (size_t t = 0; t < e.rewards.size(); ++t)
      LT_CHECK(std::isfinite(e.rewards[t]), "rl.gigpo: episode {} step {}: the reward is {}, not a finite number",
               i + 1, t + 1, e.rewards[t]);
  }
}

// (v_k - mean v) / F(v) for each k. One value, or all equal: 0 (tested as equality, so that
// rounding in the mean can never turn equal values into +-1 when eps is 0). The std is taken of
// the deviations divided by the largest one, so that neither squares of large returns overflow
// (1e200) nor those of tiny ones underflow to a zero std. `what` names the values in errors.
std::vector<double> relative(const std::vector<double>& v, AdvNorm norm, double eps, const std::string& what) {
  const size_t n = v.size();
  std::vector<double> out(n, 0.0);
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  if (n < 2 || *lo == *hi) return out;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(n);
  double scale = 0;
  for (double x : v) scale = std::max(scale, std::abs(x - mean));
  LT_CHECK(std::isfinite(mean) && std::isfinite(scale),
           "rl.gigpo: the {} overflow doubles (values from {} to {})", what, *lo, *hi);
  if (scale == 0) return out;
  double sd = 1;
  if (norm == AdvNorm::Std) {
    double ss = 0;
    for (double x : v) ss += ((x - mean) / scale) * ((x - mean) / scale);
    sd = scale * std::sqrt(ss / double(n - 1)) + eps;
  }
  for (size_t k = 0; k < n; ++k) out[k] = (v[k] - mean) / sd;
  return out;
}

}  // namespace

std::vector<double> discounted_returns(const std::vector<double>& rewards, double gamma) {
  LT_CHECK(gamma >= 0 && gamma <= 1, "rl.gigpo: gamma must be in [0, 1], got {}", gamma);
  std::vector<double> R(rewards.size());
  double running = 0;
  for (size_t t = rewards.size(); t-- > 0;) {
    running = rewards[t] + gamma * running;
    R[t] = running;
  }
  return R;
}

std::vector<double> episode_advantages(const std::vector<Episode>& group, AdvNorm norm, double eps) {
  GigpoOptions o;
  o.eps = eps;
  check_options(o);
  check_group(group, norm);
  std::vector<double> ret(group.size(), 0.0);
  for (size_t i = 0; i < group.size(); ++i)
    for (double r : group[i].rewards) ret[i] += r;
  for (size_t i = 0; i < group.size(); ++i)
    LT_CHECK(std::isfinite(ret[i]), "rl.gigpo: episode {}'s return overflows doubles", i + 1);
  return relative(ret, norm, eps, "episode returns");
}

GigpoAdvantages gigpo_advantages(const std::vector<Episode>& group, const GigpoOptions& o) {
  check_options(o);
  check_group(group, o.norm);
  GigpoAdvantages a;
  const size_t N = group.size();
  a.episode_return.assign(N, 0.0);
  for (size_t i = 0; i < N; ++i)
    for (double r : group[i].rewards) a.episode_return[i] += r;
  for (size_t i = 0; i < N; ++i)
    LT_CHECK(std::isfinite(a.episode_return[i]), "rl.gigpo: episode {}'s return overflows doubles", i + 1);
  a.episode = relative(a.episode_return, o.norm, o.eps, "episode returns");

  // anchor groups by first appearance; members[g] lists (episode, step) of group g
  std::unordered_map<std::string, int64_t> id;
  std::vector<std::vector<std::pair<size_t, size_t>>> members;
  a.returns.resize(N);
  a.anchor_group.resize(N);
  for (size_t i = 0; i < N; ++i) {
    a.returns[i] = discounted_returns(group[i].rewards, o.gamma);
    for (size_t t = 0; t < a.returns[i].size(); ++t)
      LT_CHECK(std::isfinite(a.returns[i][t]), "rl.gigpo: episode {} step {}: the discounted return overflows doubles",
               i + 1, t + 1);
    a.anchor_group[i].resize(group[i].anchors.size());
    for (size_t t = 0; t < group[i].anchors.size(); ++t) {
      auto [it, fresh] = id.emplace(group[i].anchors[t], int64_t(members.size()));
      if (fresh) members.emplace_back();
      members[size_t(it->second)].emplace_back(i, t);
      a.anchor_group[i][t] = it->second;
    }
  }

  a.step.resize(N);
  for (size_t i = 0; i < N; ++i) a.step[i].assign(group[i].rewards.size(), 0.0);
  a.group_size.reserve(members.size());
  for (size_t g = 0; g < members.size(); ++g) {
    const auto& m = members[g];
    a.group_size.push_back(int64_t(m.size()));
    std::vector<double> v;
    v.reserve(m.size());
    for (auto [i, t] : m) v.push_back(a.returns[i][t]);
    const std::vector<double> rel = relative(v, o.norm, o.eps, fmt::format("returns of anchor group {}", g + 1));
    for (size_t k = 0; k < m.size(); ++k) a.step[m[k].first][m[k].second] = rel[k];
  }

  a.advantage.resize(N);
  for (size_t i = 0; i < N; ++i) {
    a.advantage[i].resize(a.step[i].size());
    for (size_t t = 0; t < a.step[i].size(); ++t)
      a.advantage[i][t] = a.episode[i] + o.omega * a.step[i][t];
    for (double x : a.advantage[i])
      LT_CHECK(std::isfinite(x), "rl.gigpo: episode {}: an advantage overflows doubles (omega {})", i + 1, o.omega);
  }
  return a;
}

}  // namespace ltrun::rl

// runtime/eval/metrics.cpp: avg@k, pass@k, votes and set overlap.
#include "runtime/eval/metrics.h"

#include <algorithm>
#include <iterator>

#include "runtime/core/error.h"
#include "runtime/eval/math_answer.h"

namespace ltrun::eval {

double avg_at_k(int n, int c) {
  LT_CHECK(n >= 1 && c >= 0 && c <= n, "avg@k: need 0 <= c <= n and n >= 1, got n={} c={}", n, c);
  return static_cast<double>(c) / n;
}

double pass_at_k(int n, int c, int k) {
  LT_CHECK(n >= 1 && c >= 0 && c <= n, "pass@k: need 0 <= c <= n and n >= 1, got n={} c={}", n, c);
  LT_CHECK(k >= 1 && k <= n, "pass@k: need 1 <= k <= n, got k={} n={}", k, n);
  if (n - c < k) return 1.0;  // every draw of k holds a correct sample
  double miss = 1.0;          // C(n-c, k) / C(n, k)
  for (int i = n - c + 1; i <= n; ++i) miss *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - miss;
}

double mean_avg_at_k(const std::vector<SampleCount>& items) {
  LT_CHECK(!items.empty(), "avg@k over no items");
  double sum = 0;
  for (const auto& s : items) sum += avg_at_k(s.n, s.c);
  return sum / items.size();
}

double mean_pass_at_k(const std::vector<SampleCount>& items, int k) {
  LT_CHECK(!items.empty(), "pass@{} over no items", k);
  double sum = 0;
  for (const auto& s : items) sum += pass_at_k(s.n, s.c, k);
  return sum / items.size();
}

Vote vote(const std::vector<std::string>& answers, Compare compare) {
  struct Group {
    const std::string* first;  // its earliest answer
    int count;
  };
  std::vector<Group> groups;  // in order of first appearance
  Vote v;
  for (const std::string& a : answers) {
    if (a.empty()) continue;
    ++v.total;
    auto same = [&](const Group& g) {
      return compare == Compare::exact ? *g.first == a : equivalent(*g.first, a);
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.push_back({&a, 1});
    } else {
      ++it->count;
    }
  }
  // strictly greater: on a tie the earlier group stays
  const Group* best = nullptr;
  for (const Group& g : groups)
    if (!best || g.count > best->count) best = &g;
  if (best) {
    v.answer = *best->first;
    v.votes = best->count;
  }
  return v;
}

std::vector<Vote> majority_vote(const std::vector<std::vector<std::string>>& per_model,
                                Compare compare) {
  if (per_model.empty()) return {};
  const size_t items = per_model.front().size();
  for (size_t m = 1; m < per_model.size(); ++m)
    LT_CHECK(per_model[m].size() == items,
             "majority vote: model {} has {} answers, model 0 has {}", m, per_model[m].size(),
             items);
  std::vector<Vote> out;
  out.reserve(items);
  std::vector<std::string> column(per_model.size());
  for (size_t i = 0; i < items; ++i) {
    for (size_t m = 0; m < per_model.size(); ++m) column[m] = per_model[m][i];
    out.push_back(vote(column, compare));
  }
  return out;
}

Vote self_consistency(const std::vector<std::string>& samples, Compare compare) {
  return vote(samples, compare);
}

std::set<std::string> solved_ids(const std::vector<std::string>& ids,
                                 const std::vector<bool>& correct) {
  LT_CHECK(ids.size() == correct.size(), "solved_ids: {} ids but {} results", ids.size(),
           correct.size());
  std::set<std::string> out;
  for (size_t i = 0; i < ids.size(); ++i)
    if (correct[i]) out.insert(ids[i]);
  return out;
}

double jaccard(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() && b.empty()) return 1.0;
  std::vector<std::string> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  const size_t uni = a.size() + b.size() - both.size();
  return static_cast<double>(both.size()) / uni;
}

std::set<std::string> newly_solved(const std::set<std::string>& base,
                                   const std::set<std::string>& model) {
  std::set<std::string> out;
  std::set_difference(model.begin(), model.end(), base.begin(), base.end(),
                      std::inserter(out, out.end()));
  return out;
}

std::set<std::string> newly_failed(const std::set<std::string>& base,
                                   const std::set<std::string>& model) {
  return newly_solved(model, base);
}

Compare parse_compare(const std::string& name, const std::string& fn) {
  LT_CHECK(name == "exact" || name == "math", "{}: compare = '{}': expected \"exact\" or \"math\"", fn, name);
  return name == "math" ? Compare::math : Compare::exact;
}

}  // namespace ltrun::eval

// runtime/eval/metrics.h: scores over samples (avg@k, pass@k), votes (several models on one
// item, k samples of one model), and the overlap of solved sets.
#pragma once
#include <set>
#include <string>
#include <vector>

namespace ltrun::eval {

// --- sampling metrics ---------------------------------------------------------------------
// For one item with n samples of which c are correct:
//   avg@n  = c / n
//   pass@k = 1 - C(n-c, k) / C(n, k), the unbiased estimator of Chen et al. (2021),
//            computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i) so large n does not overflow.
// Errors unless 0 <= c <= n and 1 <= k <= n.
double avg_at_k(int n, int c);
double pass_at_k(int n, int c, int k);

struct SampleCount {
  int n = 0;  // samples drawn
  int c = 0;  // of which correct
};
// Means over items (each item weighs the same). Error on an empty list.
double mean_avg_at_k(const std::vector<SampleCount>& items);
double mean_pass_at_k(const std::vector<SampleCount>& items, int k);

// --- votes --------------------------------------------------------------------------------
// How answers are grouped: `exact` (equal strings; option letters), `math` (equivalent()
// classes of math_answer.h, so "0.5", "1/2" and "\frac{1}{2}" are one vote).
enum class Compare { exact, math };
// "exact" | "math"; anything else is an error naming fn and the name.
Compare parse_compare(const std::string& name, const std::string& fn);

struct Vote {
  std::string answer;  // as first written by the earliest voter of the winning group
  int votes = 0;       // answers in the winning group
  int total = 0;       // non-empty answers
};

// The most frequent answer. Empty answers abstain (all empty: answer "", votes 0).
// Ties go to the group whose first answer comes earliest in `answers`: with one answer per
// model in a fixed model order, the earliest model's answer among the tied wins.
Vote vote(const std::vector<std::string>& answers, Compare compare);

// Several models on the same items: per_model[m][i] is model m's answer to item i (all
// lists the same length). Returns one vote per item, ties as in vote().
std::vector<Vote> majority_vote(const std::vector<std::vector<std::string>>& per_model,
                                Compare compare);

// Self-consistency: the vote over k sampled answers of one model to one item (math
// equivalence by default).
Vote self_consistency(const std::vector<std::string>& samples, Compare compare = Compare::math);

// --- overlap ------------------------------------------------------------------------------
// Ids of the items answered correctly (ids and correct of the same length).
std::set<std::string> solved_ids(const std::vector<std::string>& ids,
                                 const std::vector<bool>& correct);
// |a ∩ b| / |a ∪ b|; 1 when both are empty (the sets are identical).
double jaccard(const std::set<std::string>& a, const std::set<std::string>& b);
// The items `model` solves and `base` does not (model \ base).
std::set<std::string> newly_solved(const std::set<std::string>& base,
                                   const std::set<std::string>& model);
// Items solved by `base` and no longer by `model` (base \ model).
std::set<std::string> newly_failed(const std::set<std::string>& base,
                                   const std::set<std::string>& model);

}  // namespace ltrun::eval

// tests/eval/metrics_test.cpp: avg@k and pass@k against values computed by hand from
// binomial coefficients, votes and their tie rule, Jaccard overlap and solved sets.
#include <catch2/catch.hpp>

#include "runtime/core/error.h"
#include "runtime/eval/harness.h"
#include "runtime/eval/metrics.h"

using namespace ltrun::eval;
using Set = std::set<std::string>;

TEST_CASE("pass@k = 1 - C(n-c,k)/C(n,k), by hand") {
  CHECK(pass_at_k(5, 2, 1) == Approx(1.0 - 3.0 / 5));    // C(3,1)/C(5,1)
  CHECK(pass_at_k(5, 2, 2) == Approx(1.0 - 3.0 / 10));   // C(3,2)/C(5,2)
  CHECK(pass_at_k(5, 2, 3) == Approx(1.0 - 1.0 / 10));   // C(3,3)/C(5,3)
  CHECK(pass_at_k(5, 2, 4) == 1.0);                      // n-c < k
  CHECK(pass_at_k(10, 3, 5) == Approx(1.0 - 21.0 / 252)); // C(7,5)/C(10,5)
  CHECK(pass_at_k(10, 0, 5) == 0.0);
  CHECK(pass_at_k(10, 10, 1) == 1.0);
  CHECK(pass_at_k(200, 1, 1) == Approx(0.005));
  CHECK(pass_at_k(200, 1, 100) == Approx(0.5));          // C(199,100)/C(200,100) = 100/200
  CHECK(pass_at_k(1000, 7, 1) == Approx(0.007));         // pass@1 = c/n
  CHECK_THROWS_AS(pass_at_k(5, 6, 1), ltrun::Error);
  CHECK_THROWS_AS(pass_at_k(5, 2, 6), ltrun::Error);
  CHECK_THROWS_AS(pass_at_k(5, 2, 0), ltrun::Error);
}

TEST_CASE("avg@k and means over items") {
  CHECK(avg_at_k(4, 3) == 0.75);
  CHECK(avg_at_k(8, 0) == 0.0);
  CHECK(mean_avg_at_k({{4, 3}, {8, 2}}) == Approx((0.75 + 0.25) / 2));
  CHECK(mean_pass_at_k({{5, 2}, {10, 3}}, 1) == Approx((0.4 + 0.3) / 2));
  CHECK(mean_pass_at_k({{5, 2}, {10, 3}}, 2) == Approx((0.7 + (1.0 - 21.0 / 45)) / 2));  // C(7,2)/C(10,2)
  CHECK_THROWS_AS(mean_pass_at_k({}, 1), ltrun::Error);
  CHECK_THROWS_AS(avg_at_k(0, 0), ltrun::Error);
}

TEST_CASE("vote: most frequent, ties to the earliest, empty answers abstain") {
  Vote v = vote({"B", "C", "C", "A"}, Compare::exact);
  CHECK(v.answer == "C");
  CHECK(v.votes == 2);
  CHECK(v.total == 4);
  CHECK(vote({"B", "C", "B", "C"}, Compare::exact).answer == "B");  // tie: B appears first
  CHECK(vote({"C", "B", "B", "C"}, Compare::exact).answer == "C");  // tie: C appears first
  CHECK(vote({"A", "B", "C"}, Compare::exact).answer == "A");       // all tied: first model
  v = vote({"", "D", "", "D", "A"}, Compare::exact);
  CHECK(v.answer == "D");
  CHECK(v.votes == 2);
  CHECK(v.total == 3);
  v = vote({"", ""}, Compare::exact);
  CHECK(v.answer.empty());
  CHECK(v.votes == 0);
  CHECK(v.total == 0);
}

TEST_CASE("majority vote of models per item") {
  // three models, four items
  const std::vector<std::vector<std::string>> per_model = {
      {"A", "B", "C", "D"},
      {"A", "C", "D", ""},
      {"B", "C", "A", ""},
  };
  const auto votes = majority_vote(per_model, Compare::exact);
  REQUIRE(votes.size() == 4);
  CHECK(votes[0].answer == "A");
  CHECK(votes[0].votes == 2);
  CHECK(votes[1].answer == "C");
  CHECK(votes[2].answer == "C");  // three-way tie: model 0's answer
  CHECK(votes[2].votes == 1);
  CHECK(votes[3].answer == "D");  // the others abstain
  CHECK(votes[3].total == 1);
  CHECK_THROWS_AS(majority_vote({{"A"}, {"A", "B"}}, Compare::exact), ltrun::Error);
}

TEST_CASE("self-consistency groups equivalent math answers") {
  Vote v = self_consistency({"2", "0.5", "1/2", "\\frac{1}{2}", "2", ""});
  CHECK(v.answer == "0.5");  // the group's first answer as written
  CHECK(v.votes == 3);
  CHECK(v.total == 5);
  // exact comparison would split them
  CHECK(self_consistency({"2", "0.5", "1/2", "\\frac{1}{2}", "2"}, Compare::exact).answer == "2");
  // tie between equivalence groups: the earliest group
  CHECK(self_consistency({"3.0", "1,000", "3", "1000"}).answer == "3.0");
  CHECK(self_consistency({"1,000", "3.0", "3", "1000"}).answer == "1,000");
}

TEST_CASE("overlap: Jaccard, newly solved") {
  const std::vector<std::string> ids = {"q1", "q2", "q3", "q4"};
  const Set base = solved_ids(ids, {true, true, false, false});
  const Set model = solved_ids(ids, {false, true, true, true});
  CHECK(base == Set{"q1", "q2"});
  CHECK(model == Set{"q2", "q3", "q4"});
  CHECK(jaccard(base, model) == Approx(1.0 / 4));
  CHECK(jaccard(Set{"a", "b", "c"}, Set{"b", "c", "d"}) == Approx(0.5));
  CHECK(jaccard(base, base) == 1.0);
  CHECK(jaccard(Set{}, Set{}) == 1.0);
  CHECK(jaccard(Set{"a"}, Set{}) == 0.0);
  CHECK(newly_solved(base, model) == Set{"q3", "q4"});
  CHECK(newly_failed(base, model) == Set{"q1"});
  CHECK(newly_solved(model, model).empty());
  CHECK_THROWS_AS(solved_ids(ids, {true}), ltrun::Error);
}

TEST_CASE("C-Eval / CMMLU Average: macro mean of the four categories beside the micro accuracy") {
  ltrun::eval::Summary s;
  s.by_category["STEM"] = {4, 3};            // 0.75
  s.by_category["Humanities"] = {2, 1};      // 0.5
  s.by_category["Social Science"] = {1, 0};  // 0
  s.by_category["Other"] = {3, 2};           // 2/3
  s.all = {10, 6};
  // (0.75 + 0.5 + 0 + 2/3) / 4 = 23/48; the micro accuracy weighs items: 6/10
  CHECK(s.acc_macro() == Approx(23.0 / 48.0).epsilon(1e-12));
  CHECK(s.all.acc() == Approx(0.6).epsilon(1e-12));
  // an unnamed category and one without labelled items do not count
  s.by_category[""] = {5, 5};
  s.by_category["empty"] = {0, 0};
  CHECK(s.acc_macro() == Approx(23.0 / 48.0).epsilon(1e-12));
  CHECK(ltrun::eval::Summary{}.acc_macro() == 0.0);
}

TEST_CASE("parse_compare: exact and math; another name is an error naming fn and the name") {
  using namespace ltrun::eval;
  CHECK(parse_compare("exact", "f") == Compare::exact);
  CHECK(parse_compare("math", "f") == Compare::math);
  CHECK_THROWS_WITH(parse_compare("Math", "lt.eval.vote"),
                    "lt.eval.vote: compare = 'Math': expected \"exact\" or \"math\"");
}

TEST_CASE("item_result_fields: the keys scripts read, unique, correct a boolean") {
  using namespace ltrun::eval;
  const auto keys = ltrun::field_keys(item_result_fields(), {"id", "choice_logp"});
  CHECK(ltrun::duplicate_key(keys) == "");
  ItemResult r;
  r.correct = true;
  for (const auto& f : item_result_fields())
    if (std::string(f.key) == "correct") CHECK(r.*std::get<bool ItemResult::*>(f.member));
}

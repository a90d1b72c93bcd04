// tests/eval/categories_test.cpp: the official subject -> category maps: sizes, per-category
// counts as the papers give them (C-Eval: 20/10/11/11; CMMLU: 15 China-specific), lookups.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "runtime/eval/categories.h"

using namespace ltrun::eval;
using Strings = std::vector<std::string>;

namespace {
std::map<std::string, int> count_by_category(const char* bench) {
  std::map<std::string, int> n;
  for (const Subject& s : subjects(bench)) {
    ++n[std::string(s.category)];
    if (!s.also.empty()) ++n[std::string(s.also)];
  }
  return n;
}
}  // namespace

TEST_CASE("C-Eval: 52 subjects in four categories") {
  REQUIRE(subjects("ceval").size() == 52);
  const auto n = count_by_category("ceval");
  CHECK(n == std::map<std::string, int>{{"STEM", 20}, {"Social Science", 10}, {"Humanities", 11}, {"Other", 11}});
  CHECK(category_of("ceval", "computer_network") == "STEM");
  CHECK(category_of("ceval", "veterinary_medicine") == "STEM");
  CHECK(category_of("ceval", "mao_zedong_thought") == "Social Science");
  CHECK(category_of("ceval", "high_school_chinese") == "Humanities");
  CHECK(category_of("ceval", "legal_professional") == "Humanities");
  CHECK(category_of("ceval", "clinical_medicine") == "Other");
  CHECK(category_of("ceval", "physician") == "Other");
  CHECK(find_subject("ceval", "computer_network")->name_zh == "计算机网络");
  CHECK(find_subject("ceval", "mao_zedong_thought")->name_zh == "毛泽东思想和中国特色社会主义理论体系概论");
  CHECK(categories_of("ceval", "logic") == Strings{"Humanities"});
  CHECK(category_names("ceval") == Strings{"STEM", "Social Science", "Humanities", "Other"});
}

TEST_CASE("CMMLU: 67 subjects, China specific as a second group") {
  REQUIRE(subjects("cmmlu").size() == 67);
  const auto n = count_by_category("cmmlu");
  CHECK(n.at("China specific") == 15);
  CHECK(n.at("STEM") + n.at("Humanities") + n.at("Social Science") + n.at("Other") == 67);
  CHECK(category_of("cmmlu", "ancient_chinese") == "Social Science");
  CHECK(categories_of("cmmlu", "ancient_chinese") == Strings{"Social Science", "China specific"});
  CHECK(categories_of("cmmlu", "chinese_driving_rule") == Strings{"Other", "China specific"});
  CHECK(categories_of("cmmlu", "chinese_history") == Strings{"Humanities", "China specific"});
  CHECK(categories_of("cmmlu", "agronomy") == Strings{"Other"});
  CHECK(category_of("cmmlu", "anatomy") == "STEM");
  CHECK(category_of("cmmlu", "global_facts") == "Humanities");
  CHECK(category_of("cmmlu", "computer_security") == "Other");  // as the official file has it
  CHECK(category_of("cmmlu", "college_medical_statistics") == "STEM");
  CHECK(find_subject("cmmlu", "ancient_chinese")->name_zh == "古汉语");
  CHECK(category_names("cmmlu") ==
        Strings{"STEM", "Humanities", "Social Science", "Other", "China specific"});
}

TEST_CASE("MMLU: 57 subjects; unknown benchmarks and subjects") {
  REQUIRE(subjects("mmlu").size() == 57);
  const auto n = count_by_category("mmlu");
  CHECK(n == std::map<std::string, int>{{"STEM", 18}, {"Humanities", 13}, {"Social Sciences", 12}, {"Other", 14}});
  CHECK(category_of("mmlu", "abstract_algebra") == "STEM");
  CHECK(category_of("mmlu", "professional_law") == "Humanities");
  CHECK(category_of("mmlu", "econometrics") == "Social Sciences");
  CHECK(category_of("mmlu", "anatomy") == "Other");

  CHECK(category_of("ceval", "no_such_subject").empty());
  CHECK(categories_of("gsm8k", "x").empty());
  CHECK(subjects("gsm8k").empty());
  CHECK(find_subject("mmlu", "ancient_chinese") == nullptr);

  // every subject is listed once, and every category is a declared one
  for (const char* bench : {"ceval", "cmmlu", "mmlu"}) {
    std::set<std::string_view> names;
    const auto cats = category_names(bench);
    for (const Subject& s : subjects(bench)) {
      CHECK(names.insert(s.name).second);
      CHECK(std::count(cats.begin(), cats.end(), std::string(s.category)) == 1);
    }
  }
}

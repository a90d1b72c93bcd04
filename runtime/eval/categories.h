// runtime/eval/categories.h: the official subject -> category maps of C-Eval (52 subjects),
// CMMLU (67) and MMLU (57), with the Chinese subject names the prompts use.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ltrun::eval {

struct Subject {
  std::string_view name;      // as in the file names: "computer_network"
  std::string_view name_zh;   // "计算机网络" (C-Eval, CMMLU); empty for MMLU
  std::string_view category;  // the one category it counts in, see category_names()
  // CMMLU only: "China specific" for the 15 subjects its official scorer also counts in that
  // group (a subject there counts in two categories); empty elsewhere
  std::string_view also;
};

// Benchmarks: "ceval", "cmmlu", "mmlu". Another benchmark has no map (empty list, nullptr).
const std::vector<Subject>& subjects(std::string_view bench);
const Subject* find_subject(std::string_view bench, std::string_view subject);

// The category a subject counts in; "" when the benchmark or subject is not in the maps.
std::string category_of(std::string_view bench, std::string_view subject);
// Every group a subject counts in: category_of(), then "China specific" where it applies.
std::vector<std::string> categories_of(std::string_view bench, std::string_view subject);
// In the order the official leaderboards print them:
//   ceval: STEM, Social Science, Humanities, Other
//   cmmlu: STEM, Humanities, Social Science, Other, China specific
//   mmlu:  STEM, Humanities, Social Sciences, Other
std::vector<std::string> category_names(std::string_view bench);

}  // namespace ltrun::eval

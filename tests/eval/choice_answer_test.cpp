// tests/eval/choice_answer_test.cpp: the option letter read from generated text.
#include <catch2/catch.hpp>

#include "runtime/eval/choice_answer.h"

using ltrun::eval::extract_choice;

TEST_CASE("option letter from generated text") {
  CHECK(extract_choice("答案：B") == "B");
  CHECK(extract_choice("答案是C。") == "C");
  CHECK(extract_choice("答案应该是选项D") == "D");
  CHECK(extract_choice("The answer is (C)") == "C");
  CHECK(extract_choice("Answer: D") == "D");
  CHECK(extract_choice("B. 因为网络层负责路由") == "B");
  CHECK(extract_choice(" A") == "A");
  CHECK(extract_choice("A\n\n以下是中国关于") == "A");
  // full-width forms
  CHECK(extract_choice("Ｄ") == "D");
  CHECK(extract_choice("答案：Ｂ") == "B");
  CHECK(extract_choice("（Ｃ）") == "C");
  // an answer marker wins over letters before it
  CHECK(extract_choice("A和B都不对，所以答案是C") == "C");
  CHECK(extract_choice("Option A is wrong; the answer is B.") == "B");
  // letters inside words do not count
  CHECK(extract_choice("Based on the text, B") == "B");
  CHECK(extract_choice("AB") == "");
  CHECK(extract_choice("CD-ROM") == "");
  CHECK(extract_choice("none of them") == "");
  CHECK(extract_choice("b") == "");
  CHECK(extract_choice("") == "");
  // only the item's options count
  CHECK(extract_choice("E") == "");
  CHECK(extract_choice("E", 5) == "E");
  CHECK(extract_choice("答案：E，即 B", 4) == "B");
}

TEST_CASE("inclusion rule: the correct option appears in the output") {
  using ltrun::eval::contains_option;
  // the letter standing alone anywhere, not only first
  CHECK(contains_option("A or B, I think B", "B", "cold"));
  CHECK(contains_option("答案：Ｃ", "C", "三"));
  CHECK(contains_option("(D)", "D", "x"));
  // the option's text, ASCII case ignored, surrounding blanks of the option ignored
  CHECK(contains_option("the opposite is Cold.", "A", " cold "));
  CHECK(contains_option("应选《论语》", "B", "《论语》"));
  // the first-letter rule would say A here; the inclusion rule credits C as well
  CHECK(contains_option("A... no, C", "C", "wet"));
  // not there: letters inside words, another option, an empty option text
  CHECK_FALSE(contains_option("CD-ROM", "C", "disk"));
  CHECK_FALSE(contains_option("Answer: B", "A", "hot"));
  CHECK_FALSE(contains_option("nothing here", "D", ""));
  CHECK_FALSE(contains_option("", "A", "a"));
}

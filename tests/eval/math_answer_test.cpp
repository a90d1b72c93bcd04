// tests/eval/math_answer_test.cpp: final-answer extraction, the normal form, and an
// equivalence table of answers that must and must not match.
#include <catch2/catch.hpp>

#include "runtime/eval/math_answer.h"

using namespace ltrun::eval;

TEST_CASE("equivalence table") {
  struct Case {
    const char* a;
    const char* b;
    bool same;
  };
  const Case cases[] = {
      // numbers written differently
      {"1,000", "1000", true},
      {"1,234,567", "1234567", true},
      {"1{,}000", "1000", true},
      {"1,000.00", "1000", true},
      {"3.0", "3", true},
      {"3.50", "3.5", true},
      {".5", "0.5", true},
      {"5.", "5", true},
      {"-5", "\u22125", true},  // Unicode minus
      {"1e-3", "0.001", true},
      {"0.333333333", "1/3", true},            // within 1e-6 relative
      {"1000000.0000001", "1000000", true},    // within 1e-6 relative
      // fractions
      {"\\frac{1}{2}", "0.5", true},
      {"\\boxed{\\dfrac{3}{4}}", "3/4", true},
      {"\\tfrac{3}{4}", "0.75", true},
      {"\\dfrac{7}{2}", "3.5", true},
      {"\\frac12", "\\frac{1}{2}", true},
      {"-\\frac{1}{2}", "-0.5", true},
      {"\\frac{-1}{2}", "-1/2", true},
      // decoration
      {"$18$", "18", true},
      {"\\$18.00", "18", true},
      {"50\\%", "50", true},
      {"50%", "50", true},
      {"90^\\circ", "90", true},
      {"90^{\\circ}", "90", true},
      {"10\\text{ cm}", "10", true},
      {"10 \\text{ cm}^2", "10", true},
      {"18 dollars", "18", true},
      {"x = 5", "5", true},
      {"\\text{Monday}", "Monday", true},
      {"\\text{(C)}", "C", true},
      // expressions compared as normalised text
      {"\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\pi/2)", true},
      {"\\frac{\\sqrt3}{2}", "\\sqrt{3}/2", true},
      {"\\frac{1+\\sqrt{5}}{2}", "(1+\\sqrt5)/2", true},
      {"2\\sqrt{2}", "2 \\sqrt 2", true},
      {"\\boxed{x^2+1}", "x^2 + 1", true},
      // must not match
      {"1/3", "0.33", false},
      {"2", "-2", false},
      {"1,2", "12", false},        // a list, not a thousands separator
      {"1000001", "1000000", false},  // integers must be equal
      {"0.5", "50\\%", false},     // % is dropped, not divided by 100
      {"x+1", "x-1", false},
      {"\\frac{1}{2}", "\\frac{2}{1}", false},
      {"\\sqrt{2}", "\\sqrt{3}", false},
      {"(1,2)", "[1,2]", false},
      {"3", "3x", false},
      {"2x", "2", false},          // a one-letter word is not a unit
      {"1/0", "0", false},
      {"", "", false},
      {"", "0", false},
  };
  STATIC_REQUIRE(sizeof(cases) / sizeof(cases[0]) >= 30);
  for (const Case& c : cases) {
    INFO(c.a << "  vs  " << c.b);
    CHECK(equivalent(c.a, c.b) == c.same);
    CHECK(equivalent(c.b, c.a) == c.same);  // symmetric
  }
}

TEST_CASE("normal form and value") {
  CHECK(normalize_math_answer("\\boxed{\\dfrac{3}{4}}") == "3/4");
  CHECK(normalize_math_answer(" \\left( 1, 2 \\right) ") == "(1,2)");
  CHECK(normalize_math_answer("1,234") == "1234");
  CHECK(normalize_math_answer("\\frac{\\frac{1}{2}}{3}") == "(1/2)/3");
  CHECK(normalize_math_answer("\\{1, 2\\}") == "\\{1,2\\}");
  CHECK(normalize_math_answer("\\rightarrow") == "\\rightarrow");  // not \right + "arrow"
  CHECK(math_value("1,234.5") == Approx(1234.5));
  CHECK(math_value("-\\frac{3}{4}") == Approx(-0.75));
  CHECK(math_value("\\frac{-3}{4}") == Approx(-0.75));
  CHECK(math_value("12,34") == std::nullopt);
  CHECK(math_value("1234,567") == std::nullopt);
  CHECK(math_value("x") == std::nullopt);
  CHECK(math_value("\\pi") == std::nullopt);
}

TEST_CASE("extraction: ####, \\boxed, 'the answer is', last number") {
  using O = std::optional<std::string>;
  // GSM8K
  CHECK(extract_math_answer("She sells 617*2 = 1234 loaves.\n#### 1,234") == O("1,234"));
  CHECK(extract_math_answer("#### 72\n\nQuestion: next one") == O("72"));
  // \boxed: the last one, braces balanced, escaped braces skipped
  CHECK(extract_math_answer("so $x = \\boxed{\\frac{1}{2}}$.") == O("\\frac{1}{2}"));
  CHECK(extract_math_answer("\\boxed{1} then \\boxed{\\frac{\\sqrt{3}}{2}}") == O("\\frac{\\sqrt{3}}{2}"));
  CHECK(extract_math_answer("\\boxed{\\{1,2\\}}") == O("\\{1,2\\}"));
  CHECK(extract_math_answer("the result is $\\boxed 5$") == O("5"));
  CHECK(extract_math_answer("\\fbox{7}") == O("7"));
  CHECK(last_boxed("\\boxed{unclosed") == std::nullopt);
  CHECK(last_boxed("no box") == std::nullopt);
  // "the answer is"
  CHECK(extract_math_answer("First 3, then 4. The answer is 42.") == O("42"));
  CHECK(extract_math_answer("Thus, the final answer is: $\\frac{3}{4}$.") == O("$\\frac{3}{4}$"));
  CHECK(equivalent(*extract_math_answer("Thus, the final answer is: $\\frac{3}{4}$."), "0.75"));
  CHECK(extract_math_answer("The answer is 18 dollars.\nDone") == O("18 dollars"));
  CHECK(extract_math_answer("所以答案是 15。") == O("15"));
  // last number
  CHECK(extract_math_answer("3 + 4 = 7, then 7 * 2 = 14 apples") == O("14"));
  CHECK(extract_math_answer("The loss was -3 degrees") == O("-3"));
  CHECK(extract_math_answer("compute 5-3") == O("3"));
  CHECK(extract_math_answer("it costs 1,234.50 in total") == O("1,234.50"));
  CHECK(extract_math_answer("values 1, 2, 3") == O("3"));
  CHECK(extract_math_answer("no numbers here") == std::nullopt);
  CHECK(extract_math_answer("") == std::nullopt);
  // priority: #### over \boxed over "answer is" over numbers
  CHECK(extract_math_answer("\\boxed{3}\n#### 4") == O("4"));
  CHECK(extract_math_answer("The answer is 2, i.e. \\boxed{3}. 9") == O("3"));
}

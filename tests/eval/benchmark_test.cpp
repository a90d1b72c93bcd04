// tests/eval/benchmark_test.cpp: the readers on hand-written fixtures in each official format
// (tests/data/eval/), and malformed files whose errors must name file:line.
#include <catch2/catch.hpp>

#include "runtime/core/error.h"
#include "runtime/eval/benchmark.h"
#include "runtime/eval/math_answer.h"

using namespace ltrun::eval;
using Strings = std::vector<std::string>;

namespace {

std::string data(const std::string& rel) { return std::string(LTRUN_TEST_DATA) + "/eval/" + rel; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("C-Eval: folder of {subject}_{split}.csv, BOM + CRLF, quotes, multi-line fields") {
  const auto items = load_benchmark(Format::ceval, data("ceval"));
  // path order: dev/cn_dev (3), test/cn_test (2), val/cn_val (2), val/hsc_val (1)
  REQUIRE(items.size() == 8);

  const Item& a = items[0];
  CHECK(a.bench == "ceval");
  CHECK(a.subject == "computer_network");
  CHECK(a.category == "STEM");
  CHECK(a.split == "dev");
  CHECK(a.id == "computer_network/dev/0");
  CHECK(a.question == "在TCP/IP协议中，\"三次握手\"用于什么？");
  CHECK(a.choices == Strings{"建立连接", "路由选择", "差错校验, 重传", "域名解析"});
  CHECK(a.answer == "A");
  CHECK(a.solution == "第一步是SYN。");
  CHECK(ends_with(a.source, "ceval/dev/computer_network_dev.csv:2"));

  const Item& b = items[1];
  CHECK(b.question == "下列哪一层\n负责路由选择？");
  CHECK(b.solution == "网络层负责路由，\n即选择路径。");
  CHECK(b.answer == "C");
  CHECK(ends_with(b.source, ":3"));
  CHECK(ends_with(items[2].source, ":6"));  // after two multi-line fields
  CHECK(items[2].choices == Strings{"21", "80", "443", "8080"});
  CHECK(items[2].solution.empty());

  // the test split hides its answers
  CHECK(items[3].split == "test");
  CHECK(items[3].id == "computer_network/test/0");
  CHECK(items[3].answer.empty());
  CHECK(items[4].choices == Strings{"/8", "/16", "/24", "/32"});

  CHECK(items[6].question == "IP地址 192.168.1.1 属于哪一类地址？");
  CHECK(items[6].id == "computer_network/val/1");
  CHECK(items[7].subject == "high_school_chinese");
  CHECK(items[7].category == "Humanities");
  CHECK(items[7].choices[0] == "甲：迫不急待, 相形见拙");
  CHECK(items[7].answer == "D");

  // one file alone reads the same
  const auto one = load_benchmark(Format::ceval, data("ceval/val/computer_network_val.csv"));
  REQUIRE(one.size() == 2);
  CHECK(one[0].id == items[5].id);
  CHECK(one[0].answer == "C");
}

TEST_CASE("CMMLU: {split}/{subject}.csv with the unnamed index column") {
  const auto items = load_benchmark(Format::cmmlu, data("cmmlu"));
  // dev/ancient_chinese (2), test/agronomy (1), test/ancient_chinese (2)
  REQUIRE(items.size() == 5);
  CHECK(items[0].id == "ancient_chinese/dev/0");
  CHECK(items[0].question == "“己所不欲，勿施于人”出自哪部典籍？");
  CHECK(items[0].choices == Strings{"《论语》", "《孟子》", "《大学》", "《中庸》"});
  CHECK(items[0].category == "Social Science");
  CHECK(items[1].question == "下列句子中，\"之\"作代词的一项是");
  CHECK(items[1].choices[2] == "均之二策, 宁许以负秦曲");

  CHECK(items[2].subject == "agronomy");
  CHECK(items[2].split == "test");
  CHECK(items[2].category == "Other");
  CHECK(items[2].answer == "B");

  CHECK(items[3].id == "ancient_chinese/test/0");
  CHECK(items[3].question == "阅读下面的句子：\n“学而不思则罔，思而不学则殆。”\n其中“罔”的意思是");
  CHECK(items[3].choices == Strings{"迷惑", "欺骗", "无", "网"});
  CHECK(ends_with(items[4].source, "cmmlu/test/ancient_chinese.csv:5"));
  CHECK(items[4].answer == "B");
}

TEST_CASE("MMLU: header-less {subject}_{split}.csv") {
  const auto items = load_benchmark(Format::mmlu, data("mmlu"));
  REQUIRE(items.size() == 5);  // dev 2, test 2, val 1
  CHECK(items[0].id == "abstract_algebra/dev/0");
  CHECK(items[0].question == "Find all c in Z_3 such that Z_3[x]/(x^2 + c) is a field.");
  CHECK(items[0].choices == Strings{"0", "1", "2", "3"});
  CHECK(items[0].category == "STEM");
  CHECK(items[1].choices == Strings{"True, True", "False, False", "True, False", "False, True"});
  CHECK(items[1].answer == "D");
  CHECK(items[2].split == "test");
  CHECK(items[2].question == "Let G be a group.\nWhich of these is always a subgroup of G?");
  CHECK(items[2].choices[2] == "The set {e, g} for any g");
  CHECK(items[3].id == "abstract_algebra/test/1");
  CHECK(ends_with(items[3].source, ":3"));
  CHECK(items[4].split == "val");
  CHECK(items[4].answer == "C");
}

TEST_CASE("GSM8K: final answer after ####, calculator annotations stripped") {
  const auto items = load_benchmark(Format::gsm8k, data("gsm8k/test.jsonl"));
  REQUIRE(items.size() == 2);
  CHECK(items[0].bench == "gsm8k");
  CHECK(items[0].id == "test/0");
  CHECK(items[0].split == "test");
  CHECK(items[0].answer == "1,234");
  CHECK(equivalent(items[0].answer, "1234"));
  CHECK(items[0].solution == "On the two days it bakes 617*2 = 1234 loaves.");
  CHECK(items[1].id == "test/1");
  CHECK(ends_with(items[1].source, "test.jsonl:3"));  // a blank line 2 is skipped
  CHECK(items[1].solution == "He gives away 12/3 = 4 apples.\nHe keeps 12-4 = 8 apples.");
  CHECK(items[1].answer == "8");
}

TEST_CASE("MATH-500: fields, and the boxed answer of the solution matches the reference") {
  const auto items = load_benchmark(Format::math500, data("math500"));
  REQUIRE(items.size() == 2);
  CHECK(items[0].id == "test/prealgebra/101.json");
  CHECK(items[0].subject == "Prealgebra");
  CHECK(items[0].category == "Prealgebra");
  CHECK(items[0].level == 1);
  CHECK(items[0].answer == "\\frac{1}{2}");
  CHECK(items[0].question == "What is $\\frac{3}{6}$ in lowest terms?");
  const auto boxed = extract_math_answer(items[0].solution);
  REQUIRE(boxed);
  CHECK(*boxed == "\\frac{1}{2}");
  CHECK(equivalent(*boxed, "0.5"));
  CHECK(items[1].level == 2);
  CHECK(equivalent(*extract_math_answer(items[1].solution), items[1].answer));
  CHECK(items[1].choices.empty());
}

TEST_CASE("generic JSONL multiple choice") {
  const auto items = load_benchmark(Format::mcq, data("mcq/sample.jsonl"));
  REQUIRE(items.size() == 3);
  CHECK(items[0].id == "q1");
  CHECK(items[0].choices == Strings{"3", "4", "5"});
  CHECK(items[0].answer == "B");
  CHECK(items[0].category == "arithmetic");
  CHECK(items[0].subject == "sample");  // the file's name
  CHECK(items[0].split == "test");
  CHECK(items[1].id == "sample/test/1");
  CHECK(items[1].choices == Strings{"巴黎", "罗马", "柏林", "马德里"});
  CHECK(items[1].answer == "A");  // index 0
  CHECK(items[2].id == "7");
  CHECK(items[2].choices.size() == 5);
  CHECK(items[2].answer == "E");  // " E " trimmed
  CHECK(items[2].subject == "numbers");
  CHECK(items[2].split == "dev");
}

TEST_CASE("generic JSONL multiple choice with its own cloze form") {
  const auto items = load_benchmark(Format::mcq, data("cloze/antonyms.jsonl"));
  REQUIRE(items.size() == 1);
  CHECK(items[0].cloze == "Opposite of wet:");
  CHECK(items[0].cloze_choices == Strings{" \"Dry\"", " \"Hot\""});
  // the other files' items have none
  CHECK(load_benchmark(Format::mcq, data("mcq/sample.jsonl"))[0].cloze_choices.empty());
}

TEST_CASE("malformed files: errors name file:line") {
  auto err = [](Format f, const std::string& rel) { return [=] { load_benchmark(f, data(rel)); }; };
  CHECK_THROWS_WITH(err(Format::ceval, "bad/ceval_fields")(),
                    Catch::Contains("computer_network_val.csv:3: expected 7 fields as in the header, found 6"));
  CHECK_THROWS_WITH(err(Format::ceval, "bad/ceval_quote")(),
                    Catch::Contains("computer_network_val.csv:3: unterminated quoted field"));
  CHECK_THROWS_WITH(err(Format::ceval, "bad/ceval_answer")(),
                    Catch::Contains("computer_network_val.csv:4: answer \"E\" is not one of A, B, C, D"));
  CHECK_THROWS_WITH(err(Format::ceval, "bad/ceval_after_quote")(),
                    Catch::Contains("computer_network_val.csv:2: unexpected text after the closing quote"));
  CHECK_THROWS_WITH(err(Format::cmmlu, "bad/cmmlu_answer")(),
                    Catch::Contains("agronomy.csv:4: answer \"\" is not one of A, B, C, D"));
  CHECK_THROWS_WITH(err(Format::mmlu, "bad/mmlu_fields")(),
                    Catch::Contains("abstract_algebra_test.csv:2: expected 6 fields"));
  CHECK_THROWS_WITH(err(Format::gsm8k, "bad/gsm8k_nohash")(),
                    Catch::Contains("test.jsonl:2: the GSM8K answer does not end in \"#### N\""));
  CHECK_THROWS_WITH(err(Format::mcq, "bad/mcq_json")(), Catch::Contains("sample.jsonl:3: invalid JSON"));
  CHECK_THROWS_WITH(err(Format::mcq, "bad/mcq_index")(),
                    Catch::Contains("sample.jsonl:1: answer index 3 is not in 0..2"));
  CHECK_THROWS_WITH(err(Format::mcq, "bad/mcq_dup")(),
                    Catch::Contains("sample.jsonl:2: duplicate item id \"q1\""));
  CHECK_THROWS_WITH(err(Format::mcq, "bad/mcq_cloze")(),
                    Catch::Contains("sample.jsonl:1: \"cloze_choices\" should be an array of 2 strings"));
  // a C-Eval file must be named {subject}_{split}.csv
  CHECK_THROWS_WITH(err(Format::ceval, "cmmlu/test/agronomy.csv")(),
                    Catch::Contains("{subject}_{dev,val,test}.csv"));
  // the wrong reader for a file says which column it misses
  CHECK_THROWS_WITH(err(Format::cmmlu, "ceval/val/computer_network_val.csv")(),
                    Catch::Contains("computer_network_val.csv:1: the header has no column \"Question\""));
  CHECK_THROWS_WITH(err(Format::ceval, "no_such_folder")(), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(parse_format("arc"), Catch::Contains("unknown benchmark format \"arc\""));
}

TEST_CASE("format detection, names, splits and few-shot examples") {
  CHECK(detect_format(data("ceval")) == Format::ceval);
  CHECK(detect_format(data("cmmlu")) == Format::cmmlu);
  CHECK(detect_format(data("mmlu")) == Format::mmlu);
  CHECK(detect_format(data("gsm8k")) == Format::gsm8k);
  CHECK(detect_format(data("math500/test.jsonl")) == Format::math500);
  CHECK(detect_format(data("mcq")) == Format::mcq);
  for (Format f : {Format::ceval, Format::cmmlu, Format::mmlu, Format::gsm8k, Format::math500, Format::mcq})
    CHECK(parse_format(format_name(f)) == f);

  const auto items = load_benchmark(Format::ceval, data("ceval"));
  const auto val = select_split(items, "val");
  REQUIRE(val.size() == 3);
  CHECK(val[2].subject == "high_school_chinese");
  const auto shots = few_shot_examples(items, "computer_network", 2);
  REQUIRE(shots.size() == 2);
  CHECK(shots[0].id == "computer_network/dev/0");
  CHECK(shots[1].id == "computer_network/dev/1");
  CHECK(few_shot_examples(items, "computer_network", 5).size() == 3);  // only 3 in dev
  CHECK(few_shot_examples(items, "high_school_chinese", 5).empty());

  CHECK(choice_letter(0) == "A");
  CHECK(choice_letter(3) == "D");
  CHECK(choice_index("C") == 2);
  CHECK(choice_index("c") == -1);
  CHECK(choice_index("AB") == -1);
}

// tests/eval/prompt_test.cpp: the official prompt strings, written out by hand from the
// benchmarks' scripts, zero-shot and k-shot.
#include <catch2/catch.hpp>

#include "runtime/core/error.h"
#include "runtime/eval/harness.h"
#include "runtime/eval/prompt.h"

using namespace ltrun::eval;

namespace {

Item mc(const char* bench, const char* subject, const char* q, std::vector<std::string> choices,
        const char* answer) {
  Item it;
  it.bench = bench;
  it.subject = subject;
  it.question = q;
  it.choices = std::move(choices);
  it.answer = answer;
  it.id = std::string(subject) + "/x";
  return it;
}

std::string data(const std::string& rel) { return std::string(LTRUN_TEST_DATA) + "/eval/" + rel; }

}  // namespace

TEST_CASE("C-Eval prompt") {
  const Item q = mc("ceval", "computer_network", "问题？", {"甲", "乙", "丙", "丁"}, "");
  CHECK(ceval_prompt(q) ==
        "以下是中国关于计算机网络考试的单项选择题，请选出其中的正确答案。\n\n"
        "问题？\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案：");
  const Item s1 = mc("ceval", "computer_network", "例一", {"1", "2", "3", "4"}, "B");
  const Item s2 = mc("ceval", "computer_network", "例二", {"5", "6", "7", "8"}, "D");
  CHECK(ceval_prompt(q, {s1, s2}) ==
        "以下是中国关于计算机网络考试的单项选择题，请选出其中的正确答案。\n\n"
        "例一\nA. 1\nB. 2\nC. 3\nD. 4\n答案：B\n\n"
        "例二\nA. 5\nB. 6\nC. 7\nD. 8\n答案：D\n\n"
        "问题？\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案：");
  CHECK(choice_prompt(q, {s1}) == ceval_prompt(q, {s1}));
}

TEST_CASE("C-Eval prompt from the fixture files, dev as shots") {
  const auto items = load_benchmark(Format::ceval, data("ceval"));
  const auto val = select_split(items, "val");
  const auto shots = few_shot_examples(items, "computer_network", 1);
  CHECK(ceval_prompt(val[0], shots) ==
        "以下是中国关于计算机网络考试的单项选择题，请选出其中的正确答案。\n\n"
        "在TCP/IP协议中，\"三次握手\"用于什么？\nA. 建立连接\nB. 路由选择\nC. 差错校验, 重传\nD. 域名解析\n答案：A\n\n"
        "以太网帧的最小长度是多少字节？\nA. 32\nB. 46\nC. 64\nD. 128\n答案：");
}

TEST_CASE("CMMLU prompt") {
  const Item q = mc("cmmlu", "ancient_chinese", "问题？", {"甲", "乙", "丙", "丁"}, "A");
  CHECK(cmmlu_prompt(q) ==
        "以下是关于古汉语的单项选择题，请直接给出正确答案的选项。\n\n"
        "题目：问题？\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案是：");
  const Item s = mc("cmmlu", "ancient_chinese", "例", {"1", "2", "3", "4"}, "C");
  CHECK(choice_prompt(q, {s}) ==
        "以下是关于古汉语的单项选择题，请直接给出正确答案的选项。\n\n"
        "题目：例\nA. 1\nB. 2\nC. 3\nD. 4\n答案是：C\n\n"
        "题目：问题？\nA. 甲\nB. 乙\nC. 丙\nD. 丁\n答案是：");
}

TEST_CASE("MMLU prompt, generic multiple choice, errors") {
  const Item q = mc("mmlu", "abstract_algebra", "Q?", {"w", "x", "y", "z"}, "A");
  CHECK(mmlu_prompt(q) ==
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
        "Q?\nA. w\nB. x\nC. y\nD. z\nAnswer:");
  const Item s = mc("mmlu", "abstract_algebra", "S?", {"1", "2", "3", "4"}, "B");
  CHECK(choice_prompt(q, {s, s}) ==
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
        "S?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
        "S?\nA. 1\nB. 2\nC. 3\nD. 4\nAnswer: B\n\n"
        "Q?\nA. w\nB. x\nC. y\nD. z\nAnswer:");
  // a generic item keeps its own number of options
  const Item g = mc("mcq", "trivia", "2+2?", {"3", "4", "5"}, "B");
  CHECK(choice_prompt(g) ==
        "The following are multiple choice questions (with answers) about trivia.\n\n"
        "2+2?\nA. 3\nB. 4\nC. 5\nAnswer:");
  // a subject outside the maps is named as it is
  CHECK(ceval_prompt(mc("ceval", "new_subject", "Q", {"a", "b", "c", "d"}, "")).rfind(
            "以下是中国关于new_subject考试", 0) == 0);

  Item no_answer = s;
  no_answer.answer.clear();
  CHECK_THROWS_WITH(mmlu_prompt(q, {no_answer}), Catch::Contains("has no answer"));
  Item math;
  math.bench = "gsm8k";
  math.question = "1+1?";
  CHECK_THROWS_AS(choice_prompt(math), ltrun::Error);
}

TEST_CASE("cloze form: the item's own context and continuations, or question + Answer: and ' ' + option") {
  const Item q = mc("mcq", "trivia", "2+2?", {"3", "4", "5"}, "B");
  CHECK(cloze_prompt(q) == "2+2?\nAnswer:");
  CHECK(cloze_continuations(q) == std::vector<std::string>{" 3", " 4", " 5"});
  Item own = mc("mcq", "antonyms", "Which word means the opposite of \"wet\"?", {"dry", "hot"}, "A");
  own.cloze = "Opposite of wet:";
  own.cloze_choices = {" \"Dry\"", " \"Hot\""};
  CHECK(cloze_prompt(own) == "Opposite of wet:");
  CHECK(cloze_continuations(own) == own.cloze_choices);
  // shots: each shot's context continued by its correct option, a blank line, then the item
  CHECK(cloze_prompt(q, {own, q}) == "Opposite of wet: \"Dry\"\n\n2+2?\nAnswer: 4\n\n2+2?\nAnswer:");
  Item bad = own;
  bad.cloze_choices.pop_back();
  CHECK_THROWS_WITH(cloze_continuations(bad), Catch::Contains("1 cloze_choices for 2 choices"));
  Item no_answer = q;
  no_answer.answer.clear();
  CHECK_THROWS_WITH(cloze_prompt(q, {no_answer}), Catch::Contains("has no answer"));
}

TEST_CASE("item_prompt: math items get math_prompt (no shots), others choice_prompt with shots") {
  using namespace ltrun::eval;
  Item m;
  m.bench = "gsm8k";
  m.question = "What is 2 + 3?";
  Item c;
  c.bench = "mmlu";
  c.subject = "x";
  c.question = "Pick one";
  c.choices = {"a", "b", "c", "d"};
  c.answer = "A";
  Item shot = c;
  shot.question = "A shot question";
  CHECK(item_prompt(m, {shot}) == math_prompt(m));
  CHECK(item_prompt(c, {shot}) == choice_prompt(c, {shot}));
  CHECK(item_prompt(c, {shot}) != choice_prompt(c));
  m.bench = "math500";
  CHECK(item_prompt(m) == math_prompt(m));
}

// eval_items.prompt / .output are cut to kEvalTextBytes (db/migrations/0008): whole characters
// only, the full length said.
TEST_CASE("cap_eval_text: short text kept; long text cut at a character boundary, its length said") {
  CHECK(cap_eval_text("") == "");
  const std::string exact(kEvalTextBytes, 'x');
  CHECK(cap_eval_text(exact) == exact);
  const std::string ascii(kEvalTextBytes + 10, 'y');
  CHECK(cap_eval_text(ascii) == std::string(kEvalTextBytes, 'y') + "…[cut: 4010 bytes]");
  // after 3,999 ASCII bytes "é" (2 bytes) spans bytes 3,999 and 4,000: the cut goes before it
  const std::string mixed = std::string(kEvalTextBytes - 1, 'z') + "é" + "tail";
  const std::string cut = cap_eval_text(mixed);
  CHECK(cut == std::string(kEvalTextBytes - 1, 'z') + "…[cut: 4005 bytes]");
}

// runtime/eval/prompt.cpp: prompt strings, byte for byte as the official scripts build them.
#include "runtime/eval/prompt.h"

#include "runtime/core/error.h"
#include "runtime/eval/categories.h"

namespace ltrun::eval {
namespace {

// "{question}\nA. ..\nB. .." (all options of the item)
std::string question_block(const Item& item) {
  LT_CHECK(!item.choices.empty(), "{}: item {} has no options to put in a prompt", item.source,
           item.id);
  std::string s = item.question;
  for (size_t i = 0; i < item.choices.size(); ++i)
    s += "\n" + choice_letter(static_cast<int>(i)) + ". " + item.choices[i];
  return s;
}

const std::string& shot_answer(const Item& shot) {
  LT_CHECK(!shot.answer.empty(), "{}: few-shot example {} has no answer", shot.source, shot.id);
  return shot.answer;
}

std::string name_zh(const char* bench, const std::string& subject) {
  const Subject* s = find_subject(bench, subject);
  return s && !s->name_zh.empty() ? std::string(s->name_zh) : subject;
}

}  // namespace

std::string ceval_prompt(const Item& item, const std::vector<Item>& shots) {
  std::string p = "以下是中国关于" + name_zh("ceval", item.subject) +
                  "考试的单项选择题，请选出其中的正确答案。\n\n";
  for (const Item& shot : shots) p += question_block(shot) + "\n答案：" + shot_answer(shot) + "\n\n";
  return p + question_block(item) + "\n答案：";
}

std::string cmmlu_prompt(const Item& item, const std::vector<Item>& shots) {
  std::string p = "以下是关于" + name_zh("cmmlu", item.subject) +
                  "的单项选择题，请直接给出正确答案的选项。\n\n";
  for (const Item& shot : shots)
    p += "题目：" + question_block(shot) + "\n答案是：" + shot_answer(shot) + "\n\n";
  return p + "题目：" + question_block(item) + "\n答案是：";
}

std::string mmlu_prompt(const Item& item, const std::vector<Item>& shots) {
  std::string subject = item.subject;
  for (char& c : subject)
    if (c == '_') c = ' ';
  std::string p =
      "The following are multiple choice questions (with answers) about " + subject + ".\n\n";
  for (const Item& shot : shots) p += question_block(shot) + "\nAnswer: " + shot_answer(shot) + "\n\n";
  return p + question_block(item) + "\nAnswer:";
}

std::string choice_prompt(const Item& item, const std::vector<Item>& shots) {
  if (item.bench == "ceval") return ceval_prompt(item, shots);
  if (item.bench == "cmmlu") return cmmlu_prompt(item, shots);
  LT_CHECK(item.bench == "mmlu" || item.bench == "mcq",
           "{}: no multiple-choice prompt for benchmark \"{}\"", item.source, item.bench);
  return mmlu_prompt(item, shots);
}

std::vector<std::string> cloze_continuations(const Item& item) {
  LT_CHECK(!item.choices.empty(), "{}: item {} has no options to score", item.source, item.id);
  if (item.cloze_choices.empty()) {
    std::vector<std::string> out;
    for (const auto& c : item.choices) out.push_back(" " + c);
    return out;
  }
  LT_CHECK(item.cloze_choices.size() == item.choices.size(),
           "{}: item {} has {} cloze_choices for {} choices", item.source, item.id,
           item.cloze_choices.size(), item.choices.size());
  return item.cloze_choices;
}

std::string cloze_prompt(const Item& item, const std::vector<Item>& shots) {
  auto context = [](const Item& it) { return it.cloze.empty() ? it.question + "\nAnswer:" : it.cloze; };
  std::string p;
  for (const Item& shot : shots) {
    const std::string& a = shot_answer(shot);
    const int k = choice_index(a);
    const auto cont = cloze_continuations(shot);
    LT_CHECK(k >= 0 && size_t(k) < cont.size(), "{}: few-shot example {} has answer \"{}\" for {} options",
             shot.source, shot.id, a, cont.size());
    p += context(shot) + cont[size_t(k)] + "\n\n";
  }
  return p + context(item);
}

}  // namespace ltrun::eval

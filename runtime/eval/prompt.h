// runtime/eval/prompt.h: the official zero-shot and k-shot prompts of C-Eval, CMMLU and
// MMLU. Zero-shot when `shots` is empty; shots (usually few_shot_examples(items, subject, 5))
// must carry their answers. Each prompt ends where the model writes the answer letter.
#pragma once
#include <string>
#include <vector>

#include "runtime/eval/benchmark.h"

namespace ltrun::eval {

// C-Eval (hkust-nlp/ceval, code/evaluator_series), with the subject's Chinese name:
//   以下是中国关于{计算机网络}考试的单项选择题，请选出其中的正确答案。\n\n
//   {question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\n答案：{answer}\n\n     (each shot)
//   {question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\n答案：
std::string ceval_prompt(const Item& item, const std::vector<Item>& shots = {});

// CMMLU (haonan-li/CMMLU, src/mp_utils.py, direct-answer prompt):
//   以下是关于{古汉语}的单项选择题，请直接给出正确答案的选项。\n\n
//   题目：{question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\n答案是：{answer}\n\n   (each shot)
//   题目：{question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\n答案是：
std::string cmmlu_prompt(const Item& item, const std::vector<Item>& shots = {});

// MMLU (hendrycks/test, evaluate.py), the subject's underscores read as spaces:
//   The following are multiple choice questions (with answers) about abstract algebra.\n\n
//   {question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer: {answer}\n\n        (each shot)
//   {question}\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nAnswer:
// (evaluate.py itself prints two spaces after "about", an artefact of its format_subject;
// this keeps one, as lm-evaluation-harness does.)
std::string mmlu_prompt(const Item& item, const std::vector<Item>& shots = {});

// The prompt of the item's benchmark: ceval, cmmlu; mmlu and mcq (the generic JSONL form,
// with as many options as the item has) take the MMLU form.
std::string choice_prompt(const Item& item, const std::vector<Item>& shots = {});

// The cloze form of a multiple-choice item (the options are not shown; each is scored as a
// continuation, as lm-evaluation-harness scores ARC or HellaSwag):
//   {shot's cloze context}{shot's correct continuation}\n\n   (each shot)
//   {item's cloze context}
// with the context `item.cloze`, or "{question}\nAnswer:" when that is empty.
std::string cloze_prompt(const Item& item, const std::vector<Item>& shots = {});
// The text that continues cloze_prompt for each option: item.cloze_choices, or " " + option.
// An error when cloze_choices is given with another count than choices.
std::vector<std::string> cloze_continuations(const Item& item);

}  // namespace ltrun::eval

// runtime/eval/benchmark.h: benchmark files in their official formats -> a list of items
// (C-Eval, CMMLU, MMLU, GSM8K, MATH-500, and a generic JSONL multiple-choice form).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun::eval {

// One question. Multiple choice: `choices` holds the options A, B, ... and `answer` the
// letter ("" where the split hides it: C-Eval test). Math: `choices` is empty and `answer`
// is the reference answer as written ("1,234", "\frac{1}{2}").
struct Item {
  std::string bench;     // "ceval", "cmmlu", "mmlu", "gsm8k", "math500", "mcq"
  std::string subject;   // "computer_network"; MATH: "Precalculus"; GSM8K: ""
  std::string category;  // official category (categories.h); MATH: the subject; else ""
  std::string id;        // stable and unique within a load, see load_benchmark()
  std::string split;     // "dev", "val", "test", ... (from the file's name or folder)
  std::string question;
  std::vector<std::string> choices;
  std::string answer;
  // The cloze protocol (harness.h): each option scored as the text that continues `cloze`:
  // cloze_choices[i] when given (one per option), else " " + choices[i]; an empty `cloze`
  // is the question followed by "\nAnswer:".
  std::string cloze;
  std::vector<std::string> cloze_choices;
  std::string solution;  // GSM8K (calculator annotations <<...>> removed), MATH, C-Eval explanation
  int level = 0;         // MATH difficulty 1-5; 0 elsewhere
  std::string source;    // "file:line" the item was read from
};

// An item's text fields by key (runtime/core/fields.h), as scripts see them: bench, subject,
// category, id, split, question, answer, solution, source, choices.
const Fields<Item>& item_fields();

enum class Format { ceval, cmmlu, mmlu, gsm8k, math500, mcq };
std::string_view format_name(Format f);  // the `bench` of its items
Format parse_format(std::string_view name);  // error listing the names when unknown

// A benchmark file, or a folder searched recursively for its files (*.csv for the CSV
// formats, *.jsonl otherwise), read in path order. Layouts and item ids:
//   ceval:  {subject}_{dev,val,test}.csv, header id,question,A,B,C,D[,answer][,explanation]
//           (columns found by name; answers may be empty only in the test split).
//           id = subject/split/<id column>
//   cmmlu:  {dev,test}/{subject}.csv, header ",Question,A,B,C,D,Answer" (the first column is
//           pandas' unnamed index). split = the parent folder's name.
//           id = subject/split/<index column, or the row's 0-based position if empty>
//   mmlu:   {subject}_{dev,val,test}.csv, no header: question,A,B,C,D,answer.
//           id = subject/split/<0-based row>
//   gsm8k:  {split}.jsonl of {"question", "answer"}, the answer's text ending "#### N".
//           answer = N as written; solution = the text before "####" without <<...>>.
//           id = split/<0-based line among the items>
//   math500: {split}.jsonl of {"problem", "solution", "answer", "subject", "level",
//           "unique_id"}; id = unique_id
//   mcq (generic multiple choice), {name}.jsonl, one object a line:
//           {"id": "q1" (optional, string or integer),
//            "question": "...",
//            "choices": ["...", "..."]  or keys "A", "B", ... (2 to 26 options),
//            "answer": "B" (a letter) or 1 (0-based index),
//            "subject": "..." (optional; default: the file's name without .jsonl),
//            "category": "..." (optional), "split": "..." (optional; default "test"),
//            "cloze": "..." and "cloze_choices": ["...", ...] (optional: the cloze protocol's
//            context and one continuation per option, see Item)}
//           id = the "id" field, else subject/split/<0-based line among the items>
// Multiple-choice answers are trimmed and must be a letter of an option. Malformed input is
// an error naming file:line: a wrong number of CSV fields, an unterminated quote, an answer
// not in A-D, a missing JSON key, a duplicate id.
std::vector<Item> load_benchmark(Format format, const std::string& path);

// Guesses the format of a file, or of the first benchmark file in a folder: a CSV header
// "id,question" -> ceval, ",Question" -> cmmlu, else mmlu; a JSONL first object with
// "problem" -> math500, "question" and an "answer" holding "####" -> gsm8k, "choices" or
// "A" -> mcq. Error when nothing fits.
Format detect_format(const std::string& path);

// Items of one split, in order.
std::vector<Item> select_split(const std::vector<Item>& items, std::string_view split);
// The first k items of `subject` in `split` (the official k-shot examples come from dev in
// file order); fewer when there are fewer.
std::vector<Item> few_shot_examples(const std::vector<Item>& items, std::string_view subject,
                                    int k, std::string_view split = "dev");

// "A" for 0, "B" for 1, ...; the index of a letter ("B" -> 1), -1 when not a letter.
std::string choice_letter(int index);
int choice_index(std::string_view letter);

}  // namespace ltrun::eval

// runtime/eval/choice_answer.h: the option letter a model chose, read from generated text
// (the generate protocol of multiple-choice benchmarks).
#pragma once
#include <string>
#include <string_view>

namespace ltrun::eval {

// The option letter in `text`, "" when there is none. Full-width letters (Ａ-Ｚ), colon and
// parentheses count as their ASCII forms. A letter counts only when it stands alone: the
// characters either side are not ASCII letters or digits ("B.", " A", "(C)", "答案：B"
// count; the A of "Answer" or "AB" does not). Only the first num_choices letters count.
//   1. An answer marker first: the first "答案" or "answer" (any case) followed, within
//      the next 24 bytes, by a lone letter ("答案是：B", "The answer is (C)", "Answer: D").
//   2. Else the first lone letter in the text.
// (An English article "A" counts as option A under rule 2; models answering in prose
// should be read with a marker.)
std::string extract_choice(std::string_view text, int num_choices = 4);

// The scoring rules of the generate protocol for multiple choice, by name:
//   "first_letter": the output's option letter (extract_choice) is the answer (default);
//   "contains": the correct option appears in the output (the rule of the paper's
//     appendix): its letter standing alone anywhere (full-width forms count, as above), or
//     its text (non-empty, ASCII case ignored) as a substring. Lenient by design: an output
//     naming several options counts for each of them, and so does an article "A".
// answer_letter is "A".."Z"; answer_text the correct option's text.
bool contains_option(std::string_view output, std::string_view answer_letter, std::string_view answer_text);

}  // namespace ltrun::eval

// runtime/rl/prompts.h: prompt sets for RL: JSONL files in the layouts of NuminaMath-CoT,
// MATH train, GSM8K train, DeepScaleR and Skywork-OR1 mapped to (question, answer); seeded
// down-sampling; the prompt template and a chat wrapper read from tokenizer_config.json;
// n-gram decontamination against evaluation sets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/fields.h"

namespace ltrun::rl {

struct PromptItem {
  std::string id;        // "id" / "idx" / "unique_id" of the line when present, else its line number
  std::string question;  // the problem text (no template)
  std::string answer;    // the reference final answer
  std::string source;    // "file:line"
};
// An item's fields by key (runtime/core/fields.h): id, question, answer, source.
const Fields<PromptItem>& prompt_item_fields();

// Field names; empty: found by layout, the first present of
//   question: problem | question | prompt   (prompt may be a chat list: the last user turn)
//   answer:   answer (a GSM8K answer's text after "####"; numbers as text)
//           | reward_model.ground_truth (Skywork-OR1; a JSON list string: its first entry)
//           | solution (the content of its last \boxed{})
struct PromptFields {
  std::string question, answer;
};

// One item per non-blank line. A malformed line (bad JSON, not an object, no question or no
// answer found) is an error naming file:line and what is missing.
std::vector<PromptItem> load_prompts(const std::string& path, const PromptFields& fields = {});

// n items drawn without replacement by a seeded Fisher-Yates shuffle (mt19937_64), kept in
// file order; all of them when n <= 0 or n >= size.
std::vector<PromptItem> sample_prompts(const std::vector<PromptItem>& items, int64_t n, uint64_t seed);

// The default instruction appended to each question.
extern const char* const kDefaultInstruction;  // "Please reason step by step, and put your final answer within \boxed{}."

// template: "{question}" is replaced by the question; empty: question + "\n" + instruction.
std::string format_prompt(const std::string& question, const std::string& tmpl = "");

// Wraps a prompt as one user turn followed by the start of the assistant turn, in the chat
// format named by the "chat_template" of tokenizer_config.json. ltrun has no Jinja engine: it
// recognises ChatML (Qwen: <|im_start|>) and Llama 3 (<|start_header_id|>) templates and errors
// on others.
std::string chat_prompt(const std::string& prompt, const std::string& tokenizer_config_path);

struct Decontamination {
  std::vector<PromptItem> kept;
  int64_t removed = 0;
  std::vector<std::string> removed_ids;
};

// Drops every item whose question shares a word n-gram with any of `eval_texts` (words:
// lower-cased runs of letters and digits; a text shorter than n words counts as one n-gram of
// all its words).
Decontamination decontaminate(const std::vector<PromptItem>& items,
                              const std::vector<std::string>& eval_texts, int n = 8);

}  // namespace ltrun::rl

// runtime/rl/prepare.h: prompt items made ready for rollouts: the prompt style (template,
// chat wrapper), token ids under a length limit checked before anything is generated, and
// GRPO's data preparation (seeded subsets of the training and evaluation items, n-gram
// decontamination of the training items against the evaluation questions).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/rl/prompts.h"

namespace ltrun::text {
class Tokenizer;
}

namespace ltrun::rl {

// How a question becomes a prompt: template ("...{question}..."; empty: question + the
// \boxed{} instruction), then, when chat_config names a tokenizer_config.json, its chat template.
struct PromptStyle {
  std::string tmpl, chat_config;
};

// The longest prompt (in tokens) a rollout takes: max_prompt_tokens when given, and never more
// than the model's positions leave after max_response (prompt + response <=
// max_position_embeddings; 0: the model has no limit). A 50,000-character question would
// otherwise reach the attention of the whole group at once (tens of GB) before failing.
struct PromptLimit {
  int64_t tokens = 0;  // 0: no limit
  std::string why;
};
PromptLimit prompt_limit(int64_t max_position_embeddings, int64_t max_response,
                         std::optional<int64_t> max_prompt_tokens, const std::string& fn);
// An error "fn: what: the prompt is N tokens, longer than LIMIT (why); ..." when n > limit.
void check_prompt_length(const PromptLimit& lim, size_t n, const std::string& what, const std::string& fn);

// The token ids of each item's prompt; an item over the limit is named by its source
// (file:line) or its position and id.
std::vector<std::vector<int64_t>> encode_prompts(const text::Tokenizer& tok, const std::vector<PromptItem>& items,
                                                 const PromptStyle& style, const PromptLimit& lim,
                                                 const std::string& fn);

// GRPO's items: n > 0 draws n training items (seed), eval_n > 0 draws eval_n evaluation items
// (seed + 1); ngram > 0 then drops the training items that share a word n-gram with an
// evaluation question (an error when none is left).
struct GrpoData {
  std::vector<PromptItem> items, evals;
  int64_t removed = 0;  // training items dropped by decontamination
};
GrpoData prepare_grpo_data(std::vector<PromptItem> items, std::vector<PromptItem> evals, int64_t n, int64_t eval_n,
                           int64_t ngram, uint64_t seed, const std::string& fn);

}  // namespace ltrun::rl

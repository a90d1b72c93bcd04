// runtime/rl/prepare.cpp: see prepare.h.
#include "runtime/rl/prepare.h"

#include "runtime/core/error.h"
#include "runtime/text/tokenizer.h"

namespace ltrun::rl {

PromptLimit prompt_limit(int64_t max_pos, int64_t max_response, std::optional<int64_t> max_prompt_tokens,
                         const std::string& fn) {
  PromptLimit p;
  if (max_pos > 0) {
    LT_CHECK(max_response < max_pos, "{}: max_response {} leaves no room for a prompt within the model's "
             "max_position_embeddings {}", fn, max_response, max_pos);
    p.tokens = max_pos - max_response;
    p.why = fmt::format("the model's max_position_embeddings {} less max_response {}", max_pos, max_response);
  }
  if (max_prompt_tokens && (p.tokens == 0 || *max_prompt_tokens < p.tokens)) {
    p.tokens = *max_prompt_tokens;
    p.why = "max_prompt_tokens";
  }
  return p;
}

void check_prompt_length(const PromptLimit& lim, size_t n, const std::string& what, const std::string& fn) {
  if (lim.tokens > 0 && int64_t(n) > lim.tokens)
    fail("{}: {}: the prompt is {} tokens, longer than {} ({}); shorten it or drop the item", fn, what, n,
         lim.tokens, lim.why);
}

std::vector<std::vector<int64_t>> encode_prompts(const text::Tokenizer& tok, const std::vector<PromptItem>& items,
                                                 const PromptStyle& style, const PromptLimit& lim,
                                                 const std::string& fn) {
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const PromptItem& it = items[i];
    std::string p = format_prompt(it.question, style.tmpl);
    if (!style.chat_config.empty()) p = chat_prompt(p, style.chat_config);
    const auto ids = tok.encode(p, true);
    check_prompt_length(lim, ids.size(),
                        it.source.empty() ? fmt::format("item {} (id {})", i + 1, it.id) : it.source, fn);
    out.emplace_back(ids.begin(), ids.end());
  }
  return out;
}

GrpoData prepare_grpo_data(std::vector<PromptItem> items, std::vector<PromptItem> evals, int64_t n, int64_t eval_n,
                           int64_t ngram, uint64_t seed, const std::string& fn) {
  GrpoData d;
  d.items = n > 0 ? sample_prompts(items, n, seed) : std::move(items);
  d.evals = eval_n > 0 ? sample_prompts(evals, eval_n, seed + 1) : std::move(evals);
  if (ngram > 0 && !d.evals.empty()) {
    std::vector<std::string> texts;
    for (const auto& e : d.evals) texts.push_back(e.question);
    Decontamination dc = decontaminate(d.items, texts, int(ngram));
    d.removed = dc.removed;
    d.items = std::move(dc.kept);
    LT_CHECK(!d.items.empty(), "{}: decontamination removed every prompt", fn);
  }
  return d;
}

}  // namespace ltrun::rl

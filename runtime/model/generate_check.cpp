// runtime/model/generate_check.cpp: see generate_check.h.
#include "runtime/model/generate_check.h"

#include <cmath>

#include "runtime/core/error.h"

namespace ltrun::model {

void check_generate_options(const Config& c, const std::vector<std::vector<int64_t>>& prompts,
                            const GenerateOptions& o, const GenerateNames& n) {
  const std::string& fn = n.fn;
  // NaN fails every comparison: each check is written so that NaN fails it
  LT_CHECK(std::isfinite(o.temperature) && o.temperature >= 0,
           "{}: option temperature must be a finite number >= 0 (0: greedy), got {}", fn, o.temperature);
  LT_CHECK(std::isfinite(o.top_p) && o.top_p > 0 && o.top_p <= 1,
           "{}: option top_p must be in (0, 1] (1: off), got {}", fn, o.top_p);
  LT_CHECK(o.top_k >= 0, "{}: option top_k must be >= 0 (0: off), got {}", fn, o.top_k);
  LT_CHECK(o.max_new_tokens >= 0, "{}: option {} must be >= 0, got {}", fn, n.max_new_tokens, o.max_new_tokens);
  LT_CHECK(o.max_rows >= 0, "{}: option max_rows must be >= 0 (0: all rows at once), got {}", fn, o.max_rows);
  LT_CHECK(o.cache == "dynamic" || o.cache == "static",
           "{}: option cache must be \"dynamic\" or \"static\", got \"{}\"", fn, o.cache);
  LT_CHECK(o.sync_every >= 1, "{}: option sync_every must be >= 1 (decode steps between stop checks), got {}", fn,
           o.sync_every);
  // a static cache holds no finished row past a stop check (its places refill)
  LT_CHECK(o.cache != "static" || o.drop_finished,
           "{}: cache = \"static\" always drops finished rows: drop_finished = false is for cache = \"dynamic\"", fn);
  LT_CHECK(!prompts.empty(), "{}: no prompts", fn);
  const int64_t ctx = c.max_position_embeddings;
  for (size_t b = 0; b < prompts.size(); ++b) {
    const std::vector<int64_t>& p = prompts[b];
    LT_CHECK(!p.empty(), "{}: prompt {} is empty", fn, int64_t(b) + n.first_prompt);
    for (size_t t = 0; t < p.size(); ++t)
      LT_CHECK(p[t] >= 0 && p[t] < c.vocab_size, "{}: prompt {}: token {} is id {}, outside the model's vocabulary "
               "[0, {})", fn, int64_t(b) + n.first_prompt, t + 1, p[t], c.vocab_size);
    // the decode state grows to prompt + new tokens positions: past the context the model has
    // no position for them (and a 1e9-token request would be an allocator's error, far later)
    const int64_t len = int64_t(p.size()), total = len + int64_t(o.max_new_tokens);
    if (ctx > 0 && total > ctx) {
      if (len >= ctx)
        fail("{}: prompt {} is {} tokens: the model's context is {} tokens (max_position_embeddings), which leaves no "
             "room for {} = {}; shorten the prompt", fn, int64_t(b) + n.first_prompt, len, ctx, n.max_new_tokens, o.max_new_tokens);
      fail("{}: prompt {} is {} tokens and {} is {}: {} positions, more than the model's context of {} tokens "
           "(max_position_embeddings); lower {} to at most {} or shorten the prompt",
           fn, int64_t(b) + n.first_prompt, len, n.max_new_tokens, o.max_new_tokens, total, ctx, n.max_new_tokens, ctx - len);
    }
  }
}

}  // namespace ltrun::model

// runtime/rl/rollout.cpp: G samples per prompt through model::generate, packed for training.
#include "runtime/rl/rollout.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "runtime/core/error.h"
#include "runtime/model/generate.h"

namespace ltrun::rl {

Rollouts rollout(const model::Model& m, const std::vector<std::vector<int64_t>>& prompts,
                 const RolloutOptions& o) {
  LT_CHECK(!prompts.empty(), "rl.rollout: no prompts");
  LT_CHECK(o.group_size >= 1, "rl.rollout: group_size must be >= 1, got {}", o.group_size);
  LT_CHECK(o.max_response >= 1, "rl.rollout: max_response must be >= 1, got {}", o.max_response);
  LT_CHECK(o.temperature > 0, "rl.rollout: temperature must be > 0 (sampling), got {}", o.temperature);
  LT_CHECK(o.max_rows >= 0, "rl.rollout: max_rows must be >= 0 (0: all rows at once), got {}", o.max_rows);
  LT_CHECK(o.cache == "dynamic" || o.cache == "static",
           "rl.rollout: cache must be \"dynamic\" or \"static\", got \"{}\"", o.cache);
  LT_CHECK(o.stop.empty() || o.decode, "rl.rollout: stop strings need a tokenizer (decode)");
  const int64_t G = o.group_size, N = int64_t(prompts.size()) * G;
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(size_t(N));
  Rollouts r;
  for (size_t i = 0; i < prompts.size(); ++i) {
    LT_CHECK(!prompts[i].empty(), "rl.rollout: prompt {} is empty", i + 1);
    for (int64_t g = 0; g < G; ++g) {
      rows.push_back(prompts[i]);
      r.prompt_index.push_back(int64_t(i));
    }
  }
  model::GenerateOptions go;
  go.max_new_tokens = int(o.max_response);
  go.temperature = o.temperature;
  go.top_k = o.top_k;
  go.top_p = o.top_p;
  go.stop_ids = o.stop_ids;
  go.logprobs = true;
  go.keep_stop_id = true;
  go.seed = o.seed;
  go.share_prefill = o.share_prefill;
  go.drop_finished = o.drop_finished;
  go.max_rows = o.max_rows;
  go.refill = o.refill;
  go.cache = o.cache;
  go.sync_every = o.sync_every;
  if (!o.stop.empty()) {
    go.stop = [&o](int, const std::vector<int64_t>& toks) {
      const std::string text = o.decode(toks);
      for (const std::string& s : o.stop)
        if (text.find(s) != std::string::npos) return true;
      return false;
    };
  }
  std::vector<model::Generation> gens;
  gens.reserve(size_t(N));
  const int64_t per = o.batch > 0 ? o.batch : N;
  for (int64_t s = 0; s < N; s += per) {
    const std::vector<std::vector<int64_t>> part(rows.begin() + s,
                                                 rows.begin() + std::min(N, s + per));
    go.stream_offset = o.stream_offset + s;  // row s + i: stream s + i, however the rows are split
    model::GenerateStats st;
    for (auto& g : model::generate(m, part, go, &st)) gens.push_back(std::move(g));
    r.decode_steps += st.decode_steps;
    r.refilled_rows += st.refilled_rows;
    r.graphs += st.graphs;
    r.replays += st.replays;
    r.fallbacks += st.fallbacks;
  }

  for (const auto& g : gens) r.responses.push_back(g.tokens);
  r.seq = pack_sequences(rows, r.responses, model::pad_token(m.config()), &r.response_mask);
  r.logprobs = at::zeros_like(r.response_mask);
  for (int64_t b = 0; b < N; ++b) {
    const auto& g = gens[size_t(b)];
    const int64_t k = int64_t(g.tokens.size());
    if (k > 0) r.logprobs[b].narrow(0, 0, k).copy_(at::tensor(g.logprobs, at::kFloat));
    r.tokens += k;
    r.finish.push_back(g.finish);
    if (o.decode) {
      std::string text = o.decode(g.tokens);
      size_t cut = std::string::npos;
      for (const std::string& s : o.stop) cut = std::min(cut, text.find(s));
      r.texts.push_back(cut == std::string::npos ? text : text.substr(0, cut));
    }
  }
  return r;
}

SequenceBatch pack_sequences(const std::vector<std::vector<int64_t>>& prompts,
                             const std::vector<std::vector<int64_t>>& responses, int64_t pad,
                             at::Tensor* response_mask) {
  LT_CHECK(prompts.size() == responses.size(), "rl: {} prompts for {} responses", prompts.size(),
           responses.size());
  const int64_t N = int64_t(prompts.size());
  int64_t P = 0, R = 1;  // at least one response column, so that an empty response still packs
  for (size_t i = 0; i < prompts.size(); ++i) {
    LT_CHECK(!prompts[i].empty(), "rl: prompt of row {} is empty", i + 1);
    P = std::max<int64_t>(P, int64_t(prompts[i].size()));
    R = std::max<int64_t>(R, int64_t(responses[i].size()));
  }
  at::Tensor ids = at::full({N, P + R}, pad, at::kLong);
  at::Tensor am = at::zeros({N, P + R}, at::kLong);
  at::Tensor rm = at::zeros({N, R}, at::kFloat);
  for (int64_t b = 0; b < N; ++b) {
    const auto& p = prompts[size_t(b)];
    const auto& t = responses[size_t(b)];
    const int64_t n = int64_t(p.size()), k = int64_t(t.size());
    ids[b].narrow(0, P - n, n).copy_(at::tensor(p, at::kLong));
    am[b].narrow(0, P - n, n).fill_(1);
    if (k > 0) {
      ids[b].narrow(0, P, k).copy_(at::tensor(t, at::kLong));
      am[b].narrow(0, P, k).fill_(1);
      rm[b].narrow(0, 0, k).fill_(1);
    }
  }
  if (response_mask) *response_mask = rm;
  return {ids, am, P, R};
}

const Fields<RolloutOptions>& rollout_option_fields() {
  static const Fields<RolloutOptions> f = {{"group_size", &RolloutOptions::group_size, 1},
                                           {"max_response", &RolloutOptions::max_response, 1},
                                           {"temperature", &RolloutOptions::temperature},
                                           {"top_k", &RolloutOptions::top_k, 0},
                                           {"top_p", &RolloutOptions::top_p},
                                           {"batch", &RolloutOptions::batch, 0},
                                           {"share_prefill", &RolloutOptions::share_prefill},
                                           {"drop_finished", &RolloutOptions::drop_finished},
                                           {"max_rows", &RolloutOptions::max_rows},
                                           {"refill", &RolloutOptions::refill},
                                           {"cache", &RolloutOptions::cache},
                                           {"sync_every", &RolloutOptions::sync_every, 1},
                                           {"stop", &RolloutOptions::stop}};
  return f;
}

}  // namespace ltrun::rl

// runtime/model/generate.h: batched autoregressive generation with a KV cache: left-padded
// prompts, greedy / temperature / top-k / top-p sampling from a seeded generator, stop ids
// and a stop callback; optionally the log-prob of each sampled token (for RL rollouts).
#pragma once
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/model.h"

namespace ltrun::text {
class Tokenizer;
}

namespace ltrun::model {

struct GenerateOptions {
  int max_new_tokens = 64;
  double temperature = 0.0;  // <= 0: greedy (argmax)
  int64_t top_k = 0;         // 0: off
  double top_p = 1.0;        // 1: off
  uint64_t seed = 0;         // sampling draws from a CPU generator seeded with this
  // A row stops when it samples one of these (not included in its tokens). Unset: the
  // model's eos ids.
  std::optional<std::vector<int64_t>> stop_ids;
  // Called after each new token of a row with all of that row's new tokens; true stops the
  // row (the binding decodes and checks stop strings here).
  std::function<bool(int row, const std::vector<int64_t>& tokens)> stop;
  // Id written into the left padding (masked, so any valid id); -1: the config's pad id,
  // else its first eos id, else 0.
  int64_t pad_id = -1;
  // Fill Generation::logprobs: the log-prob of each new token under the distribution it was
  // sampled from before truncation, log_softmax(logits / temperature) (log_softmax(logits)
  // when greedy). top-k / top-p are not folded in, as veRL and TRL do: the trainer
  // recomputes the same quantity, so the PPO ratio starts at 1.
  bool logprobs = false;
  // Keep a sampled stop id as the row's last token (an RL policy must learn to emit EOS).
  bool keep_stop_id = false;
};

struct Generation {
  std::vector<int64_t> tokens;  // new tokens, without the prompt (and the stop id unless kept)
  std::string finish;           // "stop_id", "stop" (the callback) or "length"
  std::vector<float> logprobs;  // options.logprobs: one per entry of tokens
};

// Prompts of different lengths as one batch: ids [B, T] left-padded with `pad` (so every
// row's last token sits in the last column) and mask [B, T], 1 for tokens, 0 for padding.
struct Padded {
  at::Tensor ids, mask;
};
Padded left_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad);
// The id written into padding (masked, so any valid id): the config's pad token, else its
// first eos id, else 0.
int64_t pad_token(const Config& c);

// One Generation per prompt; prompts may differ in length (they are left-padded).
std::vector<Generation> generate(const Model& model,
                                 const std::vector<std::vector<int64_t>>& prompts,
                                 const GenerateOptions& options = {});

// The next token of each row from logits [B, vocab] as HF's processors choose it:
// temperature, then top-k, then top-p, then a draw from `gen` (a CPU generator; the draw is
// made on the CPU so that a seed gives the same tokens on every device). Greedy ignores gen.
at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& options,
                       at::Generator& gen);

// Stop strings for text generation: a GenerateOptions::stop that ends a row once its decoded
// new tokens contain one of `stops`, and the decoded text of a row cut before the first stop
// string in it (tok and stops must outlive the returned function).
std::function<bool(int, const std::vector<int64_t>&)> stop_strings(const text::Tokenizer& tok,
                                                                   const std::vector<std::string>& stops);
std::string cut_at_stops(const text::Tokenizer& tok, const std::vector<int64_t>& tokens,
                         const std::vector<std::string>& stops);

}  // namespace ltrun::model

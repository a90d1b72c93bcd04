// runtime/rl/rollout.h: rollouts for RL: G samples per prompt, decoded in batches with the KV
// cache (model::generate), with the sampled tokens' log-probs, packed as the training batch
// [prompt (left-padded) | response (right-padded)] with its response mask.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/fields.h"
#include "runtime/model/model.h"
#include "runtime/rl/logprob.h"

namespace ltrun::rl {

struct RolloutOptions {
  int64_t group_size = 8;      // G samples per prompt
  int64_t max_response = 256;  // tokens per response at most (stop ids included)
  double temperature = 1.0;    // > 0
  int64_t top_k = 0;           // 0: off
  double top_p = 1.0;          // 1: off
  uint64_t seed = 0;           // row r samples from stream stream_offset + r under this seed
  int64_t stream_offset = 0;   // (model::row_draw); a rank's rows go on from the rows before it
  // A response ends with (and keeps) one of these; unset: the model's eos ids.
  std::optional<std::vector<int64_t>> stop_ids;
  // A response also ends once its decoded text contains one of these (needs decode); the
  // tokens up to the one completing it are kept, the text is cut before it.
  std::vector<std::string> stop;
  std::function<std::string(const std::vector<int64_t>&)> decode;  // for stop strings and texts
  int64_t batch = 0;  // rows (prompt copies) per generate call; 0: all at once
  // model::GenerateOptions: a prompt prefilled once for its G rows; finished rows leave the
  // decode batch. Off or on, the same rollouts (the bench measures what they save).
  bool share_prefill = true;
  bool drop_finished = true;
  // model::GenerateOptions: the decode path ("dynamic" or "static": a preallocated cache and
  // one step per token without host synchronisation; stop checks every sync_every steps).
  std::string cache = "dynamic";
  int64_t sync_every = 8;
  // model::GenerateOptions: at most max_rows rows decode at once (0: all of a call's rows);
  // with refill, waiting rows take the places of finished ones (continuous batching), else
  // they start once the batch has ended. Either way the same rollouts.
  int64_t max_rows = 0;
  bool refill = true;
};

// The options scripts set by key (runtime/core/fields.h): group_size, max_response,
// temperature, top_k, top_p, batch, stop, share_prefill, drop_finished, max_rows, refill (seed,
// stop_ids and
// decode are the caller's).
const Fields<RolloutOptions>& rollout_option_fields();

struct Rollouts {
  SequenceBatch seq;            // ids / attention_mask [N, P + R], P = prompt_len, R = resp_len
  at::Tensor response_mask;     // [N, R] fp32, 1 on response tokens
  at::Tensor logprobs;          // [N, R] fp32 sampling log-probs (0 off the mask)
  std::vector<int64_t> prompt_index;            // row -> prompt (rows i*G .. i*G + G-1)
  std::vector<std::vector<int64_t>> responses;  // tokens of each row
  std::vector<std::string> finish;              // "stop_id" | "stop" | "length"
  std::vector<std::string> texts;               // decoded (cut at a stop string); empty without decode
  int64_t tokens = 0;                           // response tokens in all
  int64_t decode_steps = 0;   // batched decode forwards (model::GenerateStats, all calls)
  int64_t refilled_rows = 0;  // rows that joined a batch already decoding (refill)
  int64_t graphs = 0, replays = 0, fallbacks = 0;  // cache = "static": its CUDA graphs (GenerateStats)
};

// Rows (prompts[i], responses[i]) packed as rollout() packs its own: ids and attention_mask
// [N, P + R], prompts left-padded with `pad`, responses right-padded, R >= 1; *response_mask
// (when given) [N, R] fp32, 1 on response tokens. Prompts must not be empty.
SequenceBatch pack_sequences(const std::vector<std::vector<int64_t>>& prompts,
                             const std::vector<std::vector<int64_t>>& responses, int64_t pad,
                             at::Tensor* response_mask = nullptr);

// N = prompts.size() * G rows, row i*G + g the g-th sample of prompt i. Same seed, same model
// and options: the same rollouts (bit for bit on the CPU).
Rollouts rollout(const model::Model& m, const std::vector<std::vector<int64_t>>& prompts,
                 const RolloutOptions& o);

}  // namespace ltrun::rl

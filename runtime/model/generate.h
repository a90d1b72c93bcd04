// runtime/model/generate.h: batched autoregressive generation with a KV cache: left-padded
// prompts, greedy / temperature / top-k / top-p sampling with one seeded random stream per
// row, stop ids and a stop callback; optionally the log-prob of each sampled token (for RL
// rollouts). Identical prompts are prefilled once, finished rows leave the batch and waiting
// rows take their places (continuous batching under a cap on the batch's rows). Two decode
// paths, the same tokens: a decode state that grows (the default) or one static cache and a
// step without host synchronisation (GenerateOptions::cache, static_decode.h).
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
  // Row b's k-th token is drawn with row_draw(seed, stream_offset + b, k): its own stream,
  // so a row's tokens do not depend on the other rows in the batch (nor on share_prefill,
  // drop_finished, max_rows, refill, or how a caller splits its rows into calls when it sets
  // stream_offset).
  uint64_t seed = 0;
  int64_t stream_offset = 0;
  // Identical prompts are prefilled once and their decode state (keys and values, Mamba2 /
  // Gated DeltaNet states) copied to each of their rows (G samples of a prompt).
  bool share_prefill = true;
  // A row that has finished leaves the decode batch (its state is dropped); off: it decodes
  // padding until the last row ends. Either way the same tokens.
  bool drop_finished = true;
  // At most this many rows decode at once (0: all of them); the others wait for a place.
  int64_t max_rows = 0;
  // Continuous batching: when rows finish and leave (drop_finished), waiting rows take their
  // places: they are prefilled and their decode state joins the running batch
  // (DecodeState::append_rows). Off: the next max_rows rows start once the batch has ended.
  // Either way the same tokens (each row draws from its own stream).
  bool refill = true;
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
  // Which decode path: "dynamic" (the decode state grows and is re-laid out as rows leave and
  // join) or "static" (static_decode.h: one preallocated cache of max_rows x (longest prompt +
  // max_new_tokens) positions, one step function over all blocks, the head and sampling with
  // no host synchronisation per token; a CUDA graph per batch-size bucket on a CUDA build).
  // The same tokens either way, up to the rounding of other batch shapes (as max_rows).
  std::string cache = "dynamic";
  // cache = "static": stop ids, the stop callback and the length limit are read every
  // sync_every steps (one host synchronisation); a finished row decodes on until then,
  // its extra tokens discarded.
  int64_t sync_every = 8;
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

// What a generate call did, for benchmarks and tests.
struct GenerateStats {
  int64_t decode_steps = 0;  // batched forwards of one token per running row
  int64_t prefills = 0;      // prefill forwards (one per batch started or refill)
  int64_t refilled_rows = 0; // rows that joined a batch already decoding (refill)
  int64_t peak_rows = 0;     // the most rows decoded at once
  // cache = "static" (step_graph.h): batch-size buckets whose step was captured as a CUDA
  // graph, steps run by replaying one, and captures that failed (their steps then ran
  // eagerly). All 0 when the step ran eagerly: a CPU model, a build without
  // LTRUN_WITH_CUDA_KERNELS, LTRUN_STATIC_GRAPHS=0 or the dynamic cache.
  int64_t graphs = 0;
  int64_t replays = 0;
  int64_t fallbacks = 0;
};

// One Generation per prompt; prompts may differ in length (they are left-padded).
std::vector<Generation> generate(const Model& model,
                                 const std::vector<std::vector<int64_t>>& prompts,
                                 const GenerateOptions& options = {}, GenerateStats* stats = nullptr);

// The next token of each row from logits [B, vocab] as HF's processors choose it:
// temperature, then top-k, then top-p, then inverse-CDF sampling with the uniform draws
// `u` (fp64 [B] in [0, 1), on the CPU so that a seed gives the same tokens on every device).
// Greedy ignores u.
at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& options,
                       const at::Tensor& u);
// next_tokens without its checks and copies: the tokens [B] stay on the logits' device and
// nothing waits for the device (a CUDA graph can hold it). *total (if given) receives each
// row's total probability mass [B, 1] (fp64; NaN for a row with NaN or infinite logits);
// greedy leaves it undefined. next_tokens is this plus the NaN check and the copy.
at::Tensor sample_tokens(const at::Tensor& logits, const GenerateOptions& options,
                         const at::Tensor& u, at::Tensor* total = nullptr);
// The same with u = B draws from `gen` (a CPU generator).
at::Tensor next_tokens(const at::Tensor& logits, const GenerateOptions& options,
                       at::Generator& gen);
// The uniform draw in [0, 1) of stream `row` at its step `step` under `seed` (a counter-based
// hash, splitmix64: any row's draw without drawing the others').
double row_draw(uint64_t seed, int64_t row, int64_t step);
// row_draw for int64 tensors of rows and steps (the same shape, any device) in tensor ops:
// the same bits, computed where the rows run, so a decode step draws without the host.
at::Tensor row_draws(uint64_t seed, const at::Tensor& rows, const at::Tensor& steps);

// Stop strings for text generation: a GenerateOptions::stop that ends a row once its decoded
// new tokens contain one of `stops`, and the decoded text of a row cut before the first stop
// string in it (tok and stops must outlive the returned function).
std::function<bool(int, const std::vector<int64_t>&)> stop_strings(const text::Tokenizer& tok,
                                                                   const std::vector<std::string>& stops);
std::string cut_at_stops(const text::Tokenizer& tok, const std::vector<int64_t>& tokens,
                         const std::vector<std::string>& stops);

}  // namespace ltrun::model

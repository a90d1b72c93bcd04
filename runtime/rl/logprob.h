// runtime/rl/logprob.h: log-probs of given tokens under a model, computed in chunks of
// positions so that the [batch, length, vocab] fp32 logits never exist at once (forward and
// backward: the backward pass recomputes each chunk's logits), and the policy pass over a
// batch of rollouts that skips autograd below the lowest trainable block.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "runtime/model/model.h"

namespace ltrun::rl {

struct TokenLogprobs {
  // [B, T] fp32 (fp64 for an fp64 model): log softmax(lens(h) / temperature)[target]
  at::Tensor logp;
  at::Tensor entropy;  // [B, T] as logp, no graph (only when asked)
};

// h [B, T, H]: residuals before the final norm (lens(h) are the logits); targets int64 [B, T].
// Rows of B*T are taken `chunk` at a time, so at most [chunk, vocab] logits live at once.
// Differentiable in h and in the head's parameters (final norm, lm_head) when they require
// grad: backward recomputes each chunk's logits. Same values as
// log_softmax(lens(h) / temperature).gather(targets) up to rounding.
TokenLogprobs token_logprobs(const model::Model& m, const at::Tensor& h, const at::Tensor& targets,
                             double temperature = 1.0, int64_t chunk = 1024, bool entropy = false);

// A batch of sequences whose last `resp_len` columns are responses to the prompts before them:
// ids and attention_mask [B, prompt_len + resp_len] (prompts left-padded, responses
// right-padded).
struct SequenceBatch {
  at::Tensor ids, attention_mask;
  int64_t prompt_len = 0, resp_len = 0;
};

struct PolicyPass {
  at::Tensor logp, entropy;  // [B, resp_len]
  at::Tensor entry;          // hidden[from_layer] (before block from_layer), no graph; undefined for 0
};

// Log-probs of each response token (column prompt_len + j predicted at column
// prompt_len + j - 1). from_layer k > 0: the embeddings and blocks 0 .. k-1 run without
// autograd and their output is returned as `entry` (for the shared-prefix reference), so
// backward stops at block k. `entry` given (from an earlier pass over the same batch with the
// same frozen prefix): the prefix is not run again.
// hidden[from_layer] of the batch (the residual before block from_layer, 1 <= from_layer <=
// n_layers), without a graph: the entry that policy_logprobs and Reference::logprobs share.
at::Tensor prefix_entry(const model::Model& m, const SequenceBatch& batch, int from_layer);

PolicyPass policy_logprobs(const model::Model& m, const SequenceBatch& batch, int from_layer,
                           double temperature = 1.0, int64_t chunk = 1024, bool entropy = false,
                           const at::Tensor& entry = {});

}  // namespace ltrun::rl

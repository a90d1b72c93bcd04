// runtime/model/static_decode.h (internal: generate.cpp and the tests): generate's static-cache
// path (GenerateOptions::cache = "static"). One cache preallocated for max_rows rows and
// `width` positions (attention keys and values, Mamba2 and Gated DeltaNet states), positions
// and lengths as tensors where the rows run, and one step function (all blocks, the head and
// sampling with counter-based draws) that never waits for the device: the host reads the
// sampled tokens every sync_every steps, drops finished rows (compacting the cache) and
// prefills waiting prompts into the free places. On a CUDA build the step is captured as a
// CUDA graph per batch-size bucket and replayed (step_graph.h); on the CPU it runs as is.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "runtime/model/generate.h"
#include "runtime/model/model.h"
#include "runtime/model/step_graph.h"

namespace ltrun::model {

// generate's prefill (shared with the dynamic path): rows `part` left-padded with `pad`,
// each distinct prompt once when share_prefill; the state, the last position's logits
// [rows, vocab] and the mask [rows, T] of every row.
struct Prefill {
  DecodeState state;
  at::Tensor logits, mask;
};
Prefill prefill_rows(const Model& model, const std::vector<std::vector<int64_t>>& part,
                     const GenerateOptions& o, int64_t pad);

// A row's sampling found no distribution (its total mass NaN): the error naming why, from the
// row's logits [vocab]: finite ones overflowed when divided by the temperature (it names the
// least temperature that would not), else the model gave NaN or infinite logits.
[[noreturn]] void fail_no_distribution(const at::Tensor& logits, const GenerateOptions& o, int64_t row);

// The preallocated decode state of every block: a buffer per state tensor with max_rows rows
// (keys and values [max_rows, kv_heads, width, head_dim]; recurrent states their own shapes),
// allocated at the first put and never reallocated. Places 0..n-1 hold the running rows.
class StaticCache {
 public:
  StaticCache(const Model& m, int64_t max_rows, int64_t width);
  int64_t width() const { return width_; }
  // Rows of a prefilled state (left-padded to T positions; row i's lengths[i] positions at
  // the right end) into places at .. at + rows - 1, keys and values left-aligned (position p
  // of a row at column p).
  void put(const DecodeState& prefilled, int64_t T, const std::vector<int64_t>& lengths, int64_t at);
  // Compaction: place i takes the state of place keep[i] (int64 [m], ascending).
  void keep(const at::Tensor& keep);
  // The logits [n, vocab] after one token per place 0..n-1 (ids, lengths int64 [n]; a row's
  // token goes to position lengths[i]). Writes the buffers in place; never synchronises.
  at::Tensor step(const at::Tensor& ids, const at::Tensor& lengths);
  // Bytes of the buffers (0 before the first put).
  int64_t bytes() const;

 private:
  struct Buf {
    at::Tensor* view;  // the tensor in views_'s layer state
    at::Tensor buf;
    bool positions;    // keys or values: dimension 2 is positions
  };
  const Model& model_;
  int64_t rows_, width_;
  DecodeState views_;                  // layer states whose tensors are views of the buffers
  std::vector<std::vector<Buf>> bufs_;  // per layer (empty: no state)
};

// generate() with cache = "static" (options checked; cap rows at once; max_new_tokens > 0).
// capture (tests): the steps' graphs are captured with it (StepGraphs), on any device.
std::vector<Generation> generate_static(const Model& model, const std::vector<std::vector<int64_t>>& prompts,
                                        const GenerateOptions& o, int64_t pad,
                                        const std::vector<int64_t>& stop_ids, int64_t cap, GenerateStats& st,
                                        const StepCaptureFactory& capture = {});

// The rows a step runs for n running rows: the next power of two, at most max_rows (one CUDA
// graph per bucket; the places past n decode padding, their output unused).
int64_t step_bucket(int64_t n, int64_t max_rows);

}  // namespace ltrun::model

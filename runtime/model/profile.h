// runtime/model/profile.h: CPU proxies for what costs time and memory on a GPU, so that a
// session without one can measure (and drive down) them: the ATen operators a model's blocks
// dispatch (a RecordFunction observer; on a GPU each computing operator is a kernel launch,
// and a decode step at batch 1 is launch-bound) and the peak of live tensor bytes while
// something runs (c10's memory reporting, which the CPU allocator feeds).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace ltrun::model {

// The name of the RecordFunction scope Model::forward opens around each block's forward.
extern const char* const kBlockScope;

struct OpCount {
  int64_t blocks = 0;      // block scopes entered
  int64_t dispatched = 0;  // operator calls inside blocks, nested ones included
  int64_t top = 0;         // those made by ltrun's code itself (not from inside another operator)
  // Leaf calls (no operator dispatched from inside them) that compute: views, reshapes, casts
  // to the same dtype and allocations without a fill are left out. On a GPU: one kernel each.
  int64_t kernels = 0;
  int64_t kernels_outside = 0;        // the same outside blocks (head, sampling, bookkeeping)
  std::map<std::string, int64_t> by_name;  // kernels inside blocks, by operator name
  std::map<std::string, int64_t> calls;    // operators called from outside any other, anywhere
};

// Counts the operators dispatched on this thread while fn runs.
OpCount count_ops(const std::function<void()>& fn);

struct MemoryPeak {
  int64_t start = 0;  // bytes of CPU tensors allocated while counting and still live, at the start (0)
  int64_t peak = 0;   // the most bytes allocated while fn ran and live at once
  int64_t end = 0;    // bytes allocated while fn ran and still live after it
};

class Model;

// Operators per block per decode step (averages over the steps and blocks) of greedy
// generate: `batch` rows of `prompt` tokens, new_tokens >= 2 new ones; counted as
// generate(new_tokens) minus generate(1), so the prefill and the first token drop out.
struct DecodeOps {
  double kernels = 0, dispatched = 0, top = 0;
  double outside = 0;  // kernels per decode step outside blocks (head, sampling, bookkeeping)
  std::map<std::string, double> by_name;  // kernels per block per step, by operator
};
// cache: GenerateOptions::cache ("static": the step of static_decode.h, its stop checks
// every 8 steps included in `outside`).
DecodeOps decode_ops(const Model& m, int64_t batch, int64_t prompt, int new_tokens,
                     const std::string& cache = "dynamic");

// The peak of CPU tensor bytes allocated while fn runs (on this thread; what was live before
// is not counted). Exact byte counts, the same on every host: a proxy for a GPU's peak memory.
MemoryPeak peak_memory(const std::function<void()>& fn);

}  // namespace ltrun::model

// runtime/model/profile.h: CPU proxies for what costs time and memory on a GPU, so that a
// session without one can measure (and drive down) them: the ATen operators a model's blocks
// dispatch (a RecordFunction observer; on a GPU each computing operator is a kernel launch,
// and a decode step at batch 1 is launch-bound) and the peak of live tensor bytes while
// something runs (c10's memory reporting, which the CPU allocator feeds); and a Chrome trace of
// named sections (scripts/gpu-check --profile) with each section's kernels, launches and the
// time between them.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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
  // Bytes of CPU tensors allocated inside blocks (c10's memory reporting): what a block
  // writes beside its outputs' places, a proxy for its memory traffic on a GPU.
  int64_t block_bytes = 0;
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
  double bytes = 0;    // CPU tensor bytes allocated per block per decode step (OpCount::block_bytes)
  std::map<std::string, double> by_name;  // kernels per block per step, by operator
};
// cache: GenerateOptions::cache ("static": the step of static_decode.h, its stop checks
// every 8 steps included in `outside`).
DecodeOps decode_ops(const Model& m, int64_t batch, int64_t prompt, int new_tokens,
                     const std::string& cache = "dynamic");

// The peak of CPU tensor bytes allocated while fn runs (on this thread; what was live before
// is not counted). Exact byte counts, the same on every host: a proxy for a GPU's peak memory.
MemoryPeak peak_memory(const std::function<void()>& fn);

// Bytes the CUDA caching allocator holds in live tensors on `device` (a CUDA device of a build
// with LTRUN_WITH_CUDA_KERNELS); -1 elsewhere (a CPU device, or no CUDA in this build).
int64_t device_allocated_bytes(const c10::Device& device);

// One kernel name's share of a traced section.
struct TraceKernel {
  std::string name;
  int64_t count = 0;
  double seconds = 0;  // summed durations
};
// What ran where: host kernels (leaf operators that compute, as count_ops counts them) or the
// device's own activity (CUDA kernels, copies and fills, from Kineto).
struct TraceTimeline {
  int64_t launches = 0;             // kernels started in the section
  double kernel_s = 0;              // their summed durations
  double gap_s = 0;                 // time between consecutive kernels (host: outside any kernel; device: idle)
  std::vector<TraceKernel> kernels; // by name, the longest summed time first
};
struct TraceSection {
  std::string name;
  double wall_s = 0;  // the section's host time
  TraceTimeline host;
  bool has_device = false;  // device activity was recorded (CUDA with a Kineto-enabled LibTorch)
  TraceTimeline device;
};
struct TraceResult {
  std::vector<TraceSection> sections;
  std::string source;  // "record_function", or "record_function+kineto" with CUDA activity
  int64_t events = 0;  // events written to the trace file
};

// Runs each section's fn in order on this thread and writes a Chrome trace (the JSON that
// chrome://tracing and Perfetto read) to `out`: every operator as a complete event on the host
// timeline (a RecordFunction observer; LibTorch 1.13 as Debian builds it has no Kineto), each
// section as an event around its operators. With `device` on CUDA and a LibTorch 2.x that has
// Kineto, its CUDA activity is recorded too (a device timeline, aligned to each section's
// start) and the device is synchronised at the end of each section.
TraceResult trace(const std::vector<std::pair<std::string, std::function<void()>>>& sections,
                  const std::string& out, bool device);

}  // namespace ltrun::model

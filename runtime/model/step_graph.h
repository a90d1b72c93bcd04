// runtime/model/step_graph.h: a decode step captured as a CUDA graph per batch-size bucket and
// replayed (at::cuda::CUDAGraph), so that a step of all blocks, the head and sampling is one
// launch instead of hundreds. Compiled with the CUDA side only against a CUDA LibTorch
// (LTRUN_WITH_CUDA_KERNELS, as runtime/kernels); elsewhere, and for a CPU model, the step runs
// as is. NOT YET RUN ON A GPU (docs/performance.md): the CPU tests cover the step it captures.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace ltrun::model {

class StepGraphs {
 public:
  // graphs: capture when this build and `device` can (a CUDA device of a CUDA build)
  StepGraphs(c10::Device device, bool graphs);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  // Runs `step` for `bucket` rows. With graphs: eagerly the first time (the warm-up: cuBLAS
  // handles and lazy allocations happen outside a capture), captured on a side stream the
  // second time, then replayed (the capture itself runs nothing). `step` must read and write
  // only tensors that outlive the graphs, never wait for the device, and do the same thing
  // each time for a bucket (its host code runs only until the capture).
  void run(int64_t bucket, const std::function<void()>& step);
  bool capturing() const;     // whether run() captures (a CUDA build and device)
  int64_t graphs() const;     // buckets captured so far
  int64_t replays() const;    // steps run by replaying a graph

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ltrun::model

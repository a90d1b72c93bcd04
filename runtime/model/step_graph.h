// runtime/model/step_graph.h: a decode step captured as a CUDA graph per batch-size bucket and
// replayed (at::cuda::CUDAGraph), so that a step of all blocks, the head and sampling is one
// launch instead of hundreds. Compiled with the CUDA side only against a CUDA LibTorch
// (LTRUN_WITH_CUDA_KERNELS, as runtime/kernels); elsewhere, and for a CPU model, the step runs
// as is. A capture that fails (the step throws between begin and end) is ended and discarded,
// and the step runs eagerly from then on: one warning per process, counted in fallbacks().
// NOT YET RUN ON A GPU (docs/performance.md): the CPU tests cover the step it captures and,
// through an injected StepCapture, the capture, replay and fallback logic.
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace ltrun::model {

// One graph being recorded or replayed: what StepGraphs asks of CUDA (step_graph.cpp's
// CUDA capture on the model's device), or of a test's stand-in.
class StepCapture {
 public:
  virtual ~StepCapture() = default;
  virtual void begin() = 0;           // record the work queued from here on (none of it runs)
  virtual void end() = 0;             // stop recording: the graph can replay
  virtual void abort() noexcept = 0;  // a recording that failed: end it and discard it
  virtual void replay() = 0;          // run the recorded work
};
using StepCaptureFactory = std::function<std::unique_ptr<StepCapture>()>;

class StepGraphs {
 public:
  // graphs: capture when this build and `device` can (a CUDA device of a CUDA build); the
  // captures are recorded and replayed on `device` (its index kept, whatever the current
  // device is). make (tests): capture with it instead, on any build and device.
  StepGraphs(c10::Device device, bool graphs, StepCaptureFactory make = {});
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  // Runs `step` for `bucket` rows. With graphs: eagerly the first time (the warm-up: cuBLAS
  // handles and lazy allocations happen outside a capture), captured on a side stream the
  // second time, then replayed (the capture itself runs nothing). `step` must read and write
  // only tensors that outlive the graphs, never wait for the device, and do the same thing
  // each time for a bucket (its host code runs only until the capture). When a capture throws,
  // it is ended and discarded, the step runs eagerly instead and every later one too.
  void run(int64_t bucket, const std::function<void()>& step);
  bool capturing() const;     // whether run() captures (a CUDA build and device; no fallback yet)
  int64_t graphs() const;     // buckets captured so far
  int64_t replays() const;    // steps run by replaying a graph
  int64_t fallbacks() const;  // captures that failed (the steps then ran eagerly)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ltrun::model

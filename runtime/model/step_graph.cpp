// runtime/model/step_graph.cpp: see step_graph.h. The CUDA side compiles against a CUDA
// LibTorch (and, compile only, against the CPU one's c10/cuda headers: runtime/model/CMakeLists.txt).
#include "runtime/model/step_graph.h"

#include <map>

#ifdef LTRUN_WITH_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ltrun::model {

struct StepGraphs::Impl {
  bool on = false;
  std::map<int64_t, int64_t> uses;
  int64_t replays = 0;
#ifdef LTRUN_WITH_CUDA_KERNELS
  // one graph (and its own memory pool) per bucket: buckets replay in any order, so they
  // share no pool; everything a step keeps is in tensors allocated outside the captures
  std::map<int64_t, std::unique_ptr<at::cuda::CUDAGraph>> graphs;
#endif
};

StepGraphs::StepGraphs(c10::Device device, bool graphs) : impl_(std::make_unique<Impl>()) {
#ifdef LTRUN_WITH_CUDA_KERNELS
  impl_->on = graphs && device.is_cuda();
#else
  (void)device;
  (void)graphs;
#endif
}

StepGraphs::~StepGraphs() = default;

bool StepGraphs::capturing() const { return impl_->on; }

int64_t StepGraphs::graphs() const {
#ifdef LTRUN_WITH_CUDA_KERNELS
  return int64_t(impl_->graphs.size());
#else
  return 0;
#endif
}

int64_t StepGraphs::replays() const { return impl_->replays; }

void StepGraphs::run(int64_t bucket, const std::function<void()>& step) {
  Impl& m = *impl_;
  if (!m.on || m.uses[bucket]++ == 0) {
    step();
    return;
  }
#ifdef LTRUN_WITH_CUDA_KERNELS
  auto it = m.graphs.find(bucket);
  if (it == m.graphs.end()) {
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    // capture on a side stream (CUDA cannot capture the legacy default stream), after the
    // work already queued on the current one
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    at::cuda::CUDAEvent queued;
    queued.record(current);
    queued.block(side);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      graph->capture_begin();
      step();
      graph->capture_end();
    }
    it = m.graphs.emplace(bucket, std::move(graph)).first;
  }
  it->second->replay();
  ++m.replays;
#endif
}

}  // namespace ltrun::model

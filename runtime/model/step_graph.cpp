// runtime/model/step_graph.cpp: see step_graph.h. The CUDA side compiles against a CUDA
// LibTorch (and, compile only, against the CPU one's c10/cuda headers: runtime/model/CMakeLists.txt;
// scripts/check-torch2 --cuda compiles and links it against Debian's CUDA LibTorch 2.6).
#include "runtime/model/step_graph.h"

#include <fmt/core.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#ifdef LTRUN_WITH_CUDA_KERNELS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>
#endif

namespace ltrun::model {

namespace {

#ifdef LTRUN_WITH_CUDA_KERNELS
// CUDAGraph with whether it holds a graph (a capture that reached cudaStreamEndCapture: its
// reset() then releases the memory pool itself)
struct Graph : at::cuda::CUDAGraph {
  bool recorded() const { return has_graph_ || has_graph_exec_; }
};

// The stream captures run on for device `dev`: one for the process (from the pool, not the
// legacy default stream, which CUDA cannot capture), so that its cuBLAS workspace is made
// once, not by each generate call that lands on another pool stream.
c10::cuda::CUDAStream capture_stream(c10::DeviceIndex dev) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  const std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(dev);
  if (it == streams.end()) it = streams.emplace(dev, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, dev)).first;
  return it->second;
}

// A capture on the capture stream of the model's device `dev`, after the work already queued
// on that device's current stream; the capture stream (and so the device) is current from
// begin() to end() or abort(), whatever device the caller had current. Each capture has its
// own memory pool: buckets replay in any order, so they share none; everything a step keeps is
// in tensors allocated outside the captures.
class CudaCapture final : public StepCapture {
 public:
  explicit CudaCapture(c10::DeviceIndex dev) : dev_(dev) {}
  ~CudaCapture() override { abort(); }

  void begin() override {
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(dev_);
    const c10::cuda::CUDAStream side = capture_stream(dev_);
    at::cuda::CUDAEvent queued;
    queued.record(current);
    queued.block(side);
    stream_.emplace(side);  // the side stream current on its device, and that device current
    pool_ = at::cuda::graph_pool_handle();
    begun_ = true;  // (abort() undoes what capture_begin got as far as)
    graph_.capture_begin(pool_);
  }
  void end() override {
    graph_.capture_end();
    stream_.reset();
    begun_ = false;
  }
  // Ends a capture that threw, so that the process can go on: the stream left capturing (a
  // global-mode capture makes every CUDA call in every thread fail) is ended and its partial
  // graph destroyed, the error it left cleared, the allocator stops routing this stream to
  // the pool and the pool is released.
  void abort() noexcept override {
    if (!stream_) return;
    const cudaStream_t s = stream_->current_stream().stream();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(s, &partial);  // ends it even when the capture was invalidated
      if (partial) (void)cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();  // the failed capture's error is not the next call's
    if (begun_ && !graph_.recorded()) {
#if TORCH_VERSION_MAJOR >= 2
      // capture_end did not get as far as these (each is an error when already done: ignored)
      try { c10::cuda::CUDACachingAllocator::endAllocateToPool(dev_, pool_); } catch (...) {}
      try { c10::cuda::CUDACachingAllocator::releasePool(dev_, pool_); } catch (...) {}
#endif
    }
    try { graph_.reset(); } catch (...) {}
    stream_.reset();
    begun_ = false;
  }
  void replay() override {
    const c10::cuda::CUDAGuard device(dev_);
    graph_.replay();
  }

 private:
  c10::DeviceIndex dev_;
  std::optional<c10::cuda::CUDAStreamGuard> stream_;
  c10::cuda::MempoolId_t pool_{0, 0};
  bool begun_ = false;
  Graph graph_;
};
#endif

// one warning per process: a capture that fails once fails for every bucket and call
std::atomic<bool> warned{false};

}  // namespace

struct StepGraphs::Impl {
  bool on = false;
  StepCaptureFactory make;
  std::map<int64_t, int64_t> uses;
  std::map<int64_t, std::unique_ptr<StepCapture>> graphs;
  int64_t replays = 0, fallbacks = 0;
};

StepGraphs::StepGraphs(c10::Device device, bool graphs, StepCaptureFactory make) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (make) {
    m.on = graphs;
    m.make = std::move(make);
    return;
  }
#ifdef LTRUN_WITH_CUDA_KERNELS
  m.on = graphs && device.is_cuda();
  if (m.on) {
    // the model's device, never whichever is current (ranks and --device cuda:N set none)
    const c10::DeviceIndex dev = device.has_index() ? device.index() : c10::cuda::current_device();
    m.make = [dev] { return std::make_unique<CudaCapture>(dev); };
  }
#else
  (void)device;
#endif
}

StepGraphs::~StepGraphs() = default;

bool StepGraphs::capturing() const { return impl_->on; }
int64_t StepGraphs::graphs() const { return int64_t(impl_->graphs.size()); }
int64_t StepGraphs::replays() const { return impl_->replays; }
int64_t StepGraphs::fallbacks() const { return impl_->fallbacks; }

void StepGraphs::run(int64_t bucket, const std::function<void()>& step) {
  Impl& m = *impl_;
  if (!m.on || m.uses[bucket]++ == 0) {
    step();
    return;
  }
  auto it = m.graphs.find(bucket);
  if (it == m.graphs.end()) {
    std::unique_ptr<StepCapture> g = m.make();
    try {
      g->begin();
      step();  // recorded, not run
      g->end();
    } catch (const std::exception& e) {
      g->abort();
      std::string why = e.what();  // its first line (c10::Error's carry a backtrace)
      why = why.substr(0, why.find('\n'));
      m.on = false;
      ++m.fallbacks;
      if (!warned.exchange(true))
        fmt::print(stderr,
                   "ltrun: warning: generate: capturing the static-cache decode step as a CUDA graph failed ({}); "
                   "its steps run eagerly (GenerateStats::fallbacks)\n",
                   why);
      step();  // the capture ran nothing: this step, eagerly
      return;
    }
    it = m.graphs.emplace(bucket, std::move(g)).first;
  }
  it->second->replay();
  ++m.replays;
}

}  // namespace ltrun::model

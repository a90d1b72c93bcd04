// runtime/model/profile.cpp: operator counts and Chrome traces through thread-local
// RecordFunction observers (with Kineto's CUDA activity where LibTorch has it), peak tensor
// bytes through c10's memory reporting (runtime/model/profile.h).
#include "runtime/model/profile.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR / MINOR: KinetoEvent's ns accessors from 2.x

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

// Kineto's CUDA activity (KinetoEvent::startNs/durationNs) with LibTorch 2.4 or later, which
// the GPU node's PyTorch wheels are; Debian's LibTorch 1.13 is built without Kineto, and there
// the host timeline of our own observer is the whole trace.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define LTRUN_KINETO_EVENTS 1
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#ifdef LTRUN_WITH_CUDA_KERNELS
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/model/generate.h"
#include "runtime/model/model.h"

namespace ltrun::model {

const char* const kBlockScope = "ltrun.block";

namespace {

// Operators that only describe other memory (views, reshapes of contiguous data), return
// their input (a cast to its own dtype) or allocate without writing: no kernel on a GPU.
// When one of them does compute (reshape of strided data, a real cast), the operator it calls
// for that (copy_, _to_copy, clone) is the leaf that counts.
bool no_kernel(const char* name) {
  static const std::set<std::string> names = {
      "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::transpose",
      "aten::t", "aten::narrow", "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze",
      "aten::expand", "aten::expand_as", "aten::permute", "aten::as_strided", "aten::alias",
      "aten::detach", "aten::to", "aten::contiguous", "aten::view_as", "aten::split", "aten::chunk",
      "aten::unbind", "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resize_",
      "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg", "aten::set_", "aten::result_type",
      "aten::size", "aten::stride", "aten::is_nonzero", "aten::type_as", "aten::promote_types",
      "aten::_has_compatible_shallow_copy_type", "aten::conj", "aten::_conj", "aten::is_same_size"};
  return names.count(name) > 0;
}

struct Frame {
  bool block = false;  // the block scope itself
  bool child = false;  // an operator that computes was dispatched from inside this one
  bool op = false;     // an operator (not a user scope)
  const char* name = "";
};

struct Counter {
  OpCount count;
  std::vector<Frame> stack;
  int block_depth = 0;
};
thread_local Counter* t_counter = nullptr;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Counter* c = t_counter;
  if (!c) return nullptr;
  const char* name = fn.name();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    const bool block = std::strcmp(name, kBlockScope) == 0;
    c->stack.push_back({block, false, false, name});
    if (block) {
      ++c->block_depth;
      ++c->count.blocks;
    }
    return nullptr;
  }
  bool outermost = true;  // no operator below it on the stack (user scopes aside)
  for (const Frame& f : c->stack)
    if (f.op) outermost = false;
  const bool top = c->stack.empty() || c->stack.back().block;
  if (outermost) ++c->count.calls[name];
  c->stack.push_back({false, false, true, name});
  if (c->block_depth > 0) {
    ++c->count.dispatched;
    if (top) ++c->count.top;
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  Counter* c = t_counter;
  if (!c || c->stack.empty()) return;
  const Frame f = c->stack.back();
  c->stack.pop_back();
  if (f.block) {
    --c->block_depth;
    return;
  }
  if (fn.scope() == at::RecordScope::USER_SCOPE) return;
  // an operator computes through the ones it calls (then they count), or itself (a leaf that
  // is not a view, a no-op cast or a bare allocation: that one counts)
  const bool kernel = !f.child && !no_kernel(f.name);
  if ((f.child || kernel) && !c->stack.empty()) c->stack.back().child = true;
  if (!kernel) return;
  if (c->block_depth > 0) {
    ++c->count.kernels;
    ++c->count.by_name[f.name];
  } else {
    ++c->count.kernels_outside;
  }
}

// Running sum of the bytes reported since it was installed (frees of blocks allocated
// before are not reported: the allocator never saw their size while reporting).
// LibTorch 1.x passes the totals as int64_t, 2.x as size_t: one of the two overloads below
// overrides the base's pure virtual, whichever version this is built against.
struct PeakReporter final : c10::MemoryReportingInfoBase {
  int64_t current = 0, peak = 0;
  void add(int64_t bytes, c10::Device device) {
    if (device.type() != c10::DeviceType::CPU) return;
    current += bytes;
    peak = std::max(peak, current);
  }
  void reportMemoryUsage(void*, int64_t bytes, int64_t, int64_t, c10::Device device) { add(bytes, device); }
  void reportMemoryUsage(void*, int64_t bytes, size_t, size_t, c10::Device device) { add(bytes, device); }
  bool memoryProfilingEnabled() const override { return true; }
};

// Bytes of CPU tensors allocated while count_ops' counter is inside a block (frees and other
// devices are left out).
struct BlockBytes final : c10::MemoryReportingInfoBase {
  void add(int64_t bytes, c10::Device device) {
    Counter* c = t_counter;
    if (c && c->block_depth > 0 && bytes > 0 && device.type() == c10::DeviceType::CPU) c->count.block_bytes += bytes;
  }
  void reportMemoryUsage(void*, int64_t bytes, int64_t, int64_t, c10::Device device) { add(bytes, device); }
  void reportMemoryUsage(void*, int64_t bytes, size_t, size_t, c10::Device device) { add(bytes, device); }
  bool memoryProfilingEnabled() const override { return true; }
};

// --- the trace: every operator with its host times ------------------------------------------
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct TraceEvent {
  std::string name;
  int64_t start = 0, end = 0;
  int depth = 0;
  bool scope = false;   // a user scope (a block, a section), not an operator
  bool child = false;   // an operator that computes was dispatched from inside this one
  bool kernel = false;  // a leaf that computes (as count_ops counts kernels)
};

struct Tracer {
  std::vector<TraceEvent> events;
  std::vector<size_t> stack;
};
thread_local Tracer* t_tracer = nullptr;

std::unique_ptr<at::ObserverContext> trace_start(const at::RecordFunction& fn) {
  Tracer* t = t_tracer;
  if (!t) return nullptr;
  TraceEvent e;
  e.name = fn.name();
  e.depth = int(t->stack.size());
  e.scope = fn.scope() == at::RecordScope::USER_SCOPE;
  t->stack.push_back(t->events.size());
  t->events.push_back(std::move(e));
  t->events.back().start = now_ns();  // last, so that the bookkeeping above is not in the op's time
  return nullptr;
}

void trace_end(const at::RecordFunction&, at::ObserverContext*) {
  const int64_t now = now_ns();
  Tracer* t = t_tracer;
  if (!t || t->stack.empty()) return;
  TraceEvent& e = t->events[t->stack.back()];
  t->stack.pop_back();
  e.end = now;
  if (e.scope) return;
  e.kernel = !e.child && !no_kernel(e.name.c_str());
  if ((e.child || e.kernel) && !t->stack.empty()) t->events[t->stack.back()].child = true;
}

// An interval on a timeline: a kernel's name, start and end (ns).
struct Span {
  std::string name;
  int64_t start, end;
};

// Launches, summed time, gaps between consecutive kernels and the per-name table of a
// timeline's kernels (sorted here by start).
TraceTimeline summarise(std::vector<Span> ks) {
  std::sort(ks.begin(), ks.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  TraceTimeline t;
  std::map<std::string, TraceKernel> by;
  int64_t last_end = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Span& k = ks[i];
    t.launches++;
    t.kernel_s += double(k.end - k.start) * 1e-9;
    if (i > 0 && k.start > last_end) t.gap_s += double(k.start - last_end) * 1e-9;  // overlaps (streams): no gap
    last_end = i == 0 ? k.end : std::max(last_end, k.end);
    TraceKernel& b = by[k.name];
    b.name = k.name;
    b.count++;
    b.seconds += double(k.end - k.start) * 1e-9;
  }
  for (auto& [name, k] : by) t.kernels.push_back(k);
  std::sort(t.kernels.begin(), t.kernels.end(), [](const TraceKernel& a, const TraceKernel& b) {
    return a.seconds > b.seconds || (a.seconds == b.seconds && a.name < b.name);
  });
  return t;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

}  // namespace

OpCount count_ops(const std::function<void()>& fn) {
  LT_CHECK(!t_counter, "count_ops: already counting on this thread");
  Counter c;
  t_counter = &c;
  const at::CallbackHandle h = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  try {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, std::make_shared<BlockBytes>());
    fn();
  } catch (...) {
    at::removeCallback(h);
    t_counter = nullptr;
    throw;
  }
  at::removeCallback(h);
  t_counter = nullptr;
  return c.count;
}

DecodeOps decode_ops(const Model& m, int64_t batch, int64_t prompt, int new_tokens, const std::string& cache) {
  LT_CHECK(batch >= 1 && prompt >= 1 && new_tokens >= 2,
           "decode_ops: expected batch >= 1, prompt >= 1, new_tokens >= 2, got {}, {}, {}", batch, prompt,
           new_tokens);
  const int64_t V = m.config().vocab_size;
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(batch), std::vector<int64_t>(static_cast<size_t>(prompt)));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < prompt; ++t) rows[size_t(b)][size_t(t)] = (7 * b + 13 * t + 1) % V;
  GenerateOptions g;
  g.stop_ids = std::vector<int64_t>{};  // every row runs to new_tokens
  g.cache = cache;
  auto run = [&](int n) {
    g.max_new_tokens = n;
    return count_ops([&] { generate(m, rows, g); });
  };
  run(2);  // warm-up: first calls at a shape may take other paths (allocator, kernel choice)
  const OpCount one = run(1), all = run(new_tokens);
  const double calls = double(all.blocks - one.blocks), steps = double(new_tokens - 1);
  LT_CHECK(calls > 0, "decode_ops: no block ran in the decode steps");
  DecodeOps d;
  d.kernels = double(all.kernels - one.kernels) / calls;
  d.dispatched = double(all.dispatched - one.dispatched) / calls;
  d.top = double(all.top - one.top) / calls;
  d.outside = double(all.kernels_outside - one.kernels_outside) / steps;
  d.bytes = double(all.block_bytes - one.block_bytes) / calls;
  for (const auto& [name, n] : all.by_name) {
    auto it = one.by_name.find(name);
    const double x = double(n - (it == one.by_name.end() ? 0 : it->second)) / calls;
    if (x != 0) d.by_name[name] = x;
  }
  return d;
}

TraceResult trace(const std::vector<std::pair<std::string, std::function<void()>>>& sections,
                  const std::string& out, bool device) {
  LT_CHECK(!t_tracer, "trace: already tracing on this thread");
  LT_CHECK(!sections.empty(), "trace: no sections given");
  Tracer tr;
  struct Range {
    size_t first, last;  // the section's events in tr.events
    int64_t start, end;
  };
  std::vector<Range> ranges;
  [[maybe_unused]] bool kineto = false;
#ifdef LTRUN_KINETO_EVENTS
  namespace tpi = torch::profiler::impl;
  namespace tap = torch::autograd::profiler;
  const tpi::ProfilerConfig config(tpi::ProfilerState::KINETO);
  const std::set<tpi::ActivityType> activities{tpi::ActivityType::CPU, tpi::ActivityType::CUDA};
  if (device) {
    tap::prepareProfiler(config, activities);
    tap::enableProfiler(config, activities, {at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE});
    kineto = true;
  }
#endif
  t_tracer = &tr;
  const at::CallbackHandle h = at::addThreadLocalCallback(
      at::RecordFunctionCallback(trace_start, trace_end).scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  auto stop = [&] {
    at::removeCallback(h);
    t_tracer = nullptr;
#ifdef LTRUN_KINETO_EVENTS
    if (kineto) return tap::disableProfiler();
    return std::unique_ptr<tap::ProfilerResult>();
#endif
  };
  try {
    for (const auto& [name, fn] : sections) {
      Range r{tr.events.size(), 0, now_ns(), 0};
      {
        // the section as a user scope: an event on both timelines (Kineto's places the device's)
        RECORD_USER_SCOPE(name.c_str());
        fn();
        if (device) synchronize(c10::Device(c10::kCUDA));  // its kernels end inside the section
      }
      r.last = tr.events.size();
      r.end = now_ns();
      ranges.push_back(r);
    }
  } catch (...) {
    stop();
    throw;
  }
#ifdef LTRUN_KINETO_EVENTS
  const std::unique_ptr<tap::ProfilerResult> kres = stop();
#else
  stop();
#endif

  TraceResult res;
  res.source = "record_function";
  // each section's device activity, as spans on the host clock (shifted so that Kineto's
  // section scope starts where ours did)
  std::vector<std::vector<Span>> dev(sections.size());
  bool any_device = false;
#ifdef LTRUN_KINETO_EVENTS
  if (kres) {
    std::vector<std::pair<int64_t, int64_t>> kscope(sections.size(), {-1, -1});
    for (const tap::KinetoEvent& e : kres->events())
      for (size_t i = 0; i < sections.size(); ++i)
        if (kscope[i].first < 0 && e.deviceType() == c10::DeviceType::CPU && e.name() == sections[i].first) {
          kscope[i] = {int64_t(e.startNs()), int64_t(e.startNs() + e.durationNs())};
          break;
        }
    for (const tap::KinetoEvent& e : kres->events()) {
      if (e.deviceType() != c10::DeviceType::CUDA) continue;
      const int64_t s = int64_t(e.startNs());
      for (size_t i = 0; i < sections.size(); ++i)
        if (kscope[i].first >= 0 && s >= kscope[i].first && s <= kscope[i].second) {
          const int64_t shift = ranges[i].start - kscope[i].first;
          dev[i].push_back({e.name(), s + shift, s + int64_t(e.durationNs()) + shift});
          any_device = true;
        }
    }
    res.source = any_device ? "record_function+kineto" : "record_function (Kineto gave no CUDA activity)";
  }
#endif

  const int64_t t0 = ranges.front().start;
  auto us = [&](int64_t ns) { return fmt::format("{:.3f}", double(ns - t0) * 1e-3); };
  std::string js = "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"source\": " + json_string(res.source) +
                   "}, \"traceEvents\": [\n";
  js += R"J({"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "host (ltrun)"}})J";
  if (any_device) js += ",\n" R"J({"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "cuda"}})J";
  for (size_t i = 0; i < sections.size(); ++i) {
    const Range& r = ranges[i];
    TraceSection sec;
    sec.name = sections[i].first;
    sec.wall_s = double(r.end - r.start) * 1e-9;
    std::vector<Span> host;
    for (size_t k = r.first; k < r.last; ++k) {
      const TraceEvent& e = tr.events[k];
      const char* cat = e.depth == 0 ? "section" : e.scope ? "scope" : e.kernel ? "kernel" : "op";
      js += fmt::format(",\n{{\"name\": {}, \"cat\": \"{}\", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": {}, \"dur\": {:.3f}}}",
                        json_string(e.name), cat, us(e.start), double(e.end - e.start) * 1e-3);
      ++res.events;
      if (e.kernel) host.push_back({e.name, e.start, e.end});
    }
    sec.host = summarise(std::move(host));
    if (!dev[i].empty()) {
      for (const Span& k : dev[i]) {
        js += fmt::format(",\n{{\"name\": {}, \"cat\": \"device\", \"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": {}, \"dur\": {:.3f}}}",
                          json_string(k.name), us(k.start), double(k.end - k.start) * 1e-3);
        ++res.events;
      }
      sec.has_device = true;
      sec.device = summarise(std::move(dev[i]));
    }
    res.sections.push_back(std::move(sec));
  }
  js += "\n]}\n";
  FILE* f = std::fopen(out.c_str(), "wb");
  LT_CHECK(f, "trace: cannot write {}: {}", out, std::strerror(errno));
  const bool ok = std::fwrite(js.data(), 1, js.size(), f) == js.size();
  LT_CHECK(std::fclose(f) == 0 && ok, "trace: cannot write {}: {}", out, std::strerror(errno));
  return res;
}

int64_t device_allocated_bytes(const c10::Device& device) {
#ifdef LTRUN_WITH_CUDA_KERNELS
  if (device.is_cuda()) {
    const c10::DeviceIndex i = device.has_index() ? device.index() : c10::cuda::current_device();
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(i);
    return stats.allocated_bytes[0].current;  // StatType::AGGREGATE (0 in every LibTorch)
  }
#endif
  (void)device;
  return -1;
}

MemoryPeak peak_memory(const std::function<void()>& fn) {
  auto reporter = std::make_shared<PeakReporter>();
  {
    c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, reporter);
    fn();
  }
  return {0, reporter->peak, reporter->current};
}

}  // namespace ltrun::model

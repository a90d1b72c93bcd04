// runtime/model/profile.cpp: operator counts through a thread-local RecordFunction observer,
// peak tensor bytes through c10's memory reporting (runtime/model/profile.h).
#include "runtime/model/profile.h"

#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

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

}  // namespace

OpCount count_ops(const std::function<void()>& fn) {
  LT_CHECK(!t_counter, "count_ops: already counting on this thread");
  Counter c;
  t_counter = &c;
  const at::CallbackHandle h = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
  try {
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
  for (const auto& [name, n] : all.by_name) {
    auto it = one.by_name.find(name);
    const double x = double(n - (it == one.by_name.end() ? 0 : it->second)) / calls;
    if (x != 0) d.by_name[name] = x;
  }
  return d;
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

// runtime/core/tensor_ops.cpp: see tensor_ops.h.
#include "runtime/core/tensor_ops.h"

#include "runtime/core/api.h"

#include <ATen/ATen.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/error.h"
#include "runtime/core/value.h"

namespace ltrun {

int64_t norm_index(int64_t i, int64_t size, int64_t dim) {
  const int64_t j = i < 0 ? i + size : i;
  if (j < 0 || j >= size) fail("index {} is out of range for dimension {} of size {}", i, dim, size);
  return j;
}

int64_t norm_dim(const at::Tensor& t, int64_t d) {
  const int64_t n = std::max<int64_t>(t.dim(), 1);
  if (d < -n || d >= n) fail("dimension {} is out of range for a tensor with {} dimension(s)", d, t.dim());
  return d < 0 ? d + n : d;
}

at::Tensor py_slice(const at::Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                    int64_t step) {
  LT_CHECK(step > 0, "slice step must be positive, got {}", step);
  const int64_t size = t.size(dim);
  int64_t a = start.value_or(0), b = stop.value_or(size);
  if (a < 0) a += size;
  if (b < 0) b += size;
  a = std::clamp<int64_t>(a, 0, size);
  return t.slice(dim, a, std::clamp<int64_t>(b, a, size), step);
}

at::Tensor reduce(const at::Tensor& t, Reduction r, std::optional<int64_t> dim, bool keep) {
  if (!dim) {
    switch (r) {
      case Reduction::sum: return t.sum();
      case Reduction::mean: return t.mean();
      case Reduction::prod: return t.prod();
      case Reduction::std: return t.std();
      case Reduction::var: return t.var();
      case Reduction::norm: return t.norm();
      case Reduction::amax: return t.max();
      case Reduction::amin: return t.min();
      case Reduction::all: return t.all();
      case Reduction::any: return t.any();
      case Reduction::logsumexp: return t.flatten().logsumexp(0);
    }
  }
  const int64_t d = norm_dim(t, *dim);
  switch (r) {
    case Reduction::sum: return t.sum(d, keep);
    case Reduction::mean: return t.mean(d, keep);
    case Reduction::prod: return t.prod(d, keep);
    case Reduction::std: return t.std(d, true, keep);
    case Reduction::var: return t.var(d, true, keep);
    case Reduction::norm: return t.norm(2, d, keep);
    case Reduction::amax: return t.amax(d, keep);
    case Reduction::amin: return t.amin(d, keep);
    case Reduction::all: return t.all(d, keep);
    case Reduction::any: return t.any(d, keep);
    case Reduction::logsumexp: return t.logsumexp(d, keep);
  }
  fail("reduce: unknown reduction");
}

at::Tensor checked_new(const std::string& fn, const std::vector<int64_t>& shape, const at::TensorOptions& o,
                       const std::function<at::Tensor()>& make) {
  const c10::ScalarType dtype = o.dtype().toScalarType();
  int64_t bytes = int64_t(c10::elementSize(dtype));
  bool overflow = false;
  if (std::find(shape.begin(), shape.end(), int64_t(0)) != shape.end()) bytes = 0;
  else for (int64_t s : shape) overflow = overflow || __builtin_mul_overflow(bytes, s, &bytes);
  const std::string what = fmt::format("{}: a {} tensor of shape [{}]", fn, dtype_name(dtype), fmt::join(shape, ", "));
  if (overflow) fail("{} needs more than 2^63 bytes", what);
  const bool cpu = !o.device_opt() || o.device_opt()->is_cpu();
  if (cpu && bytes > (int64_t(1) << 28)) {  // small tensors: no look at the machine
    static const int64_t have = machine_memory_bytes();  // RAM + swap: read once
    if (have > 0 && bytes > have)
      fail("{} needs {} bytes ({}), more than this machine's memory ({})", what, bytes, human_bytes(double(bytes)),
           human_bytes(double(have)));
  }
  try {
    return make();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    if (msg.find("alloc") != std::string::npos || msg.find("out of memory") != std::string::npos)
      fail("{} needs {} bytes ({}) and could not be allocated: {}", what, bytes, human_bytes(double(bytes)), msg);
    fail("{}: {}", fn, msg);  // an argument LibTorch refused (randint's bounds, ...)
  }
}

int64_t arange_size(double start, double stop, double step, const std::string& fn) {
  LT_CHECK(std::isfinite(start) && std::isfinite(stop) && std::isfinite(step) && step != 0,
           "{}: start {}, stop {}, step {}: expected finite numbers and a step other than 0", fn, start, stop, step);
  const double n = std::ceil((stop - start) / step);
  LT_CHECK(n >= 0, "{}: start {}, stop {}, step {}: the step leads away from stop", fn, start, stop, step);
  LT_CHECK(n < 9.2e18, "{}: start {}, stop {}, step {}: {} elements is too many", fn, start, stop, step, n);
  return n > 0 ? int64_t(n) : 0;
}

const std::vector<UnaryOp>& unary_ops() {
  using T = const at::Tensor&;
  static const std::vector<UnaryOp> ops = {
      {"exp", [](T t) { return t.exp(); }},
      {"log", [](T t) { return t.log(); }},
      {"log1p", [](T t) { return t.log1p(); }},
      {"sqrt", [](T t) { return t.sqrt(); }},
      {"rsqrt", [](T t) { return t.rsqrt(); }},
      {"abs", [](T t) { return t.abs(); }},
      {"neg", [](T t) { return t.neg(); }},
      {"tanh", [](T t) { return t.tanh(); }},
      {"sigmoid", [](T t) { return t.sigmoid(); }},
      {"relu", [](T t) { return t.relu(); }},
      {"sin", [](T t) { return t.sin(); }},
      {"cos", [](T t) { return t.cos(); }},
      {"floor", [](T t) { return t.floor(); }},
      {"ceil", [](T t) { return t.ceil(); }},
      {"round", [](T t) { return t.round(); }},
      {"sign", [](T t) { return t.sign(); }},
      {"reciprocal", [](T t) { return t.reciprocal(); }},
      {"isnan", [](T t) { return t.isnan(); }},
      {"clone", [](T t) { return t.clone(); }},
      {"contiguous", [](T t) { return t.contiguous(); }},
      {"detach", [](T t) { return t.detach(); }},
      {"float", [](T t) { return t.to(at::kFloat); }},
      {"double", [](T t) { return t.to(at::kDouble); }},
      {"long", [](T t) { return t.to(at::kLong); }},
      {"int", [](T t) { return t.to(at::kInt); }},
      {"bool", [](T t) { return t.to(at::kBool); }},
      {"bfloat16", [](T t) { return t.to(at::kBFloat16); }},
      {"half", [](T t) { return t.to(at::kHalf); }},
      {"cpu", [](T t) { return t.to(at::kCPU); }},
      {"t", [](T t) { return t.t(); }},
      {"flatten", [](T t) { return t.flatten(); }}};
  return ops;
}

const std::vector<BinaryOp>& binary_ops() {
  using T = const at::Tensor&;
  static const std::vector<BinaryOp> ops = {
      {"add", [](T a, T b) { return at::add(a, b); }, "__add"},
      {"sub", [](T a, T b) { return at::sub(a, b); }, "__sub"},
      {"mul", [](T a, T b) { return at::mul(a, b); }, "__mul"},
      {"div", [](T a, T b) { return at::div(a, b); }, "__div"},
      {"pow", [](T a, T b) { return at::pow(a, b); }, "__pow"},
      {"remainder", [](T a, T b) { return at::remainder(a, b); }, "__mod"},
      {"eq", [](T a, T b) { return at::eq(a, b); }, nullptr},
      {"ne", [](T a, T b) { return at::ne(a, b); }, nullptr},
      {"lt", [](T a, T b) { return at::lt(a, b); }, nullptr},
      {"le", [](T a, T b) { return at::le(a, b); }, nullptr},
      {"gt", [](T a, T b) { return at::gt(a, b); }, nullptr},
      {"ge", [](T a, T b) { return at::ge(a, b); }, nullptr},
      {"maximum", [](T a, T b) { return at::maximum(a, b); }, nullptr},
      {"minimum", [](T a, T b) { return at::minimum(a, b); }, nullptr}};
  return ops;
}

bool TensorMemory::allocated(int64_t bytes) {
  live += bytes;
  since_gc += bytes;
  if (since_gc <= threshold) return false;
  since_gc = 0;
  collections++;
  return true;
}

void TensorMemory::set_threshold(int64_t bytes) {
  LT_CHECK(bytes > 0, "lt.gc_threshold: expected a positive number of bytes, got {}", bytes);
  threshold = bytes;
}

int64_t storage_bytes(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return 0;
  return int64_t(t.storage().nbytes());
}

const std::vector<NamedReduction>& reductions() {
  static const std::vector<NamedReduction> r = {
      {"sum", Reduction::sum},   {"mean", Reduction::mean}, {"prod", Reduction::prod},
      {"std", Reduction::std},   {"var", Reduction::var},   {"norm", Reduction::norm},
      {"amax", Reduction::amax}, {"amin", Reduction::amin}, {"all", Reduction::all},
      {"any", Reduction::any},   {"logsumexp", Reduction::logsumexp}};
  return r;
}

namespace {
// Deepest nesting of rows a table may have: LibTorch tensors of more dimensions than this are
// not a use case, and the walk below recurses once per level.
constexpr size_t kMaxTableDims = 64;

void walk(const Value& t, size_t depth, TableData& d, const std::string& fn) {
  if (depth >= kMaxTableDims) fail("{}: a table nested deeper than {} levels", fn, kMaxTableDims);
  const int64_t n = int64_t(t.size());
  if (d.shape.size() == depth) d.shape.push_back(n);
  else if (d.shape[depth] != n) fail("{}: ragged table: a row of length {} where {} was expected", fn, n, d.shape[depth]);
  for (const Value& x : t.tab().array) {
    if (x.is_number()) {
      if (d.shape.size() != depth + 1) fail("{}: ragged table: a number where a row was expected", fn);
      d.values.push_back(x.num());
    } else if (const bool* b = std::get_if<bool>(&x.v)) {
      d.any_bool = true;
      d.values.push_back(*b ? 1.0 : 0.0);
    } else if (x.is_table()) {
      walk(x, depth + 1, d, fn);
    } else {
      fail("{}: tables may hold only numbers, booleans and rows, not {}", fn, x.type_name());
    }
  }
}
}  // namespace

TableData table_data(const Value& v, const std::string& fn) {
  TableData d;
  walk(v, 0, d, fn);
  return d;
}

at::Tensor tensor_from(const Value& v, const std::string& fn, int arg, c10::ScalarType number_dtype) {
  if (v.is_tensor()) return v.tensor();
  if (v.is_number()) return at::scalar_tensor(v.num(), number_dtype);
  if (!v.is_table()) fail("{}: argument {}: expected a tensor, number or table, got {}", fn, arg, v.type_name());
  const TableData d = table_data(v, fn);
  return at::tensor(d.values, at::kDouble).reshape(d.shape).to(d.any_bool ? at::kBool : number_dtype);
}

namespace {
std::vector<OptionDoc> tensor_option_docs() {
  return {{"dtype", "string", "float32, float64, bfloat16, float16, int64, int32, bool, ..."},
          {"device", "string", "cpu | cuda | cuda:N"},
          {"requires_grad", "boolean", "track gradients"}};
}

// each constructor under its own name, so `?lt.zeros` and the reference find it
[[maybe_unused]] const bool kConstructors = [] {
  for (const char* sig : {"lt.zeros(shape...[, opts])", "lt.ones(shape...[, opts])", "lt.rand(shape...[, opts])",
                          "lt.randn(shape...[, opts])", "lt.full(shape, value[, opts])",
                          "lt.arange([start, ]stop[, step][, opts])", "lt.linspace(start, stop, n[, opts])",
                          "lt.eye(n[, opts])", "lt.randint(high, shape...[, opts])"}) {
    const std::string s = sig;
    declare_api({s.substr(0, s.find('(')), s, "a new tensor", tensor_option_docs()});
  }
  return true;
}();

const ApiDoc& kTensor = declare_api({"lt.tensor", "lt.tensor(values | shape...[, opts]); t:to(opts)",
                                     "a tensor of nested lists of values, or of a shape", tensor_option_docs()});
}  // namespace

const ApiDoc& tensor_options_api() { return kTensor; }

}  // namespace ltrun

// runtime/core/tensor_ops.h: the tensor policy of the Lua API (bindings/tensor.cpp) in C++:
// PyTorch-style index and dimension normalisation, Python-style slices, reductions by name,
// and new tensors whose size is checked before anything is allocated.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ltrun {

struct Value;
// A tensor from a script value: a tensor as it is, a number (of number_dtype), or a nested
// table of numbers and booleans (rows of equal length; bool when any entry is a boolean, else
// number_dtype). Anything else: "fn: argument ARG: expected a tensor, number or table, got T".
at::Tensor tensor_from(const Value& v, const std::string& fn, int arg, c10::ScalarType number_dtype);
// The nested table's values as doubles, its shape and whether it held a boolean.
struct TableData {
  std::vector<double> values;
  std::vector<int64_t> shape;
  bool any_bool = false;
};
TableData table_data(const Value& v, const std::string& fn);

// i in [-size, size) → [0, size); else an error naming the index, dimension and size.
int64_t norm_index(int64_t i, int64_t size, int64_t dim);
// d in [-n, n) for a tensor of n >= 1 dimensions (a 0-d tensor counts as 1) → [0, n).
int64_t norm_dim(const at::Tensor& t, int64_t d);
// t[start:stop:step] along dim as Python slices it: negative bounds count from the end, bounds
// are clamped into range (an empty slice, never an error); unset: the whole dimension. step > 0.
at::Tensor py_slice(const at::Tensor& t, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop,
                    int64_t step = 1);

enum class Reduction { sum, mean, prod, std, var, norm, amax, amin, all, any, logsumexp };
// Over everything (dim unset: a 0-d tensor) or along dim (std/var unbiased, norm: 2-norm).
at::Tensor reduce(const at::Tensor& t, Reduction r, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// The reductions by the method names scripts call them (t:sum(), ..., t:logsumexp()).
struct NamedReduction {
  const char* name;
  Reduction r;
};
const std::vector<NamedReduction>& reductions();

// A new tensor of `shape` made by `make`: its bytes are counted first (an int64 overflow, or a
// CPU tensor larger than the machine's memory, is refused before anything is allocated) and a
// failed allocation becomes one line naming fn, the shape and the bytes wanted (LibTorch's own
// error carries a 25-line C++ backtrace).
at::Tensor checked_new(const std::string& fn, const std::vector<int64_t>& shape, const at::TensorOptions& o,
                       const std::function<at::Tensor()>& make);

// The number of elements of arange(start, stop, step), stop excluded; an error naming fn and
// the three numbers for a step of 0, non-finite numbers or a step away from stop.
int64_t arange_size(double start, double stop, double step, const std::string& fn);

// The one-tensor methods (t:exp(), t:float(), t:t(), ...) and the element-wise two-operand
// ones (t:add(u), t:eq(u), ...; meta: the Lua metamethod that is the same op, or nullptr), by
// the names scripts call them, in registration order.
struct UnaryOp {
  const char* name;
  at::Tensor (*fn)(const at::Tensor&);
};
struct BinaryOp {
  const char* name;
  at::Tensor (*fn)(const at::Tensor&, const at::Tensor&);
  const char* meta;
};
const std::vector<UnaryOp>& unary_ops();
const std::vector<BinaryOp>& binary_ops();

// Tensor bytes a script holds, which Lua's collector cannot see (a userdata is a few bytes):
// allocated() counts a new tensor's storage and says when a collection is due (more than
// threshold bytes allocated since the last one); released() when one is freed or collected.
struct TensorMemory {
  int64_t live = 0;      // bytes of storage held by live tensor userdata
  int64_t since_gc = 0;  // bytes allocated since the last forced collection
  int64_t threshold = int64_t(512) << 20;
  int64_t collections = 0;
  bool allocated(int64_t bytes);  // true: collect now (counted in collections)
  void released(int64_t bytes) { live -= bytes; }
  void set_threshold(int64_t bytes);  // > 0, else an error naming lt.gc_threshold
};
// Bytes of t's storage (0 for an undefined tensor or one without storage).
int64_t storage_bytes(const at::Tensor& t);

// The options every tensor constructor takes last (lt.tensor, lt.zeros, ..., t:to): dtype,
// device, requires_grad; declared here once for all of them (runtime/core/api.h).
struct ApiDoc;
const ApiDoc& tensor_options_api();

}  // namespace ltrun

// bindings/tensor.cpp: lt.Tensor. PyTorch conventions inside tensors: dimensions and indices
// count from 0, negative ones from the end, ranges are [start, stop). Lua arrays produced by
// totable() are ordinary 1-based Lua arrays. The userdata holds at::Tensor by value.
//
// Memory: Lua's collector sees only the small userdata, not the storage behind it (GPU memory
// included), so every new tensor adds its storage bytes to a counter and a full collection
// runs once that counter passes a threshold (lt.gc_threshold, default 512 MiB); t:free()
// releases a tensor at once.
#include "bindings/tensor.h"

#include <ATen/ATen.h>

#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <new>
#include <ATen/core/grad_mode.h>

#include "bindings/luat.h"
#include "runtime/core/device.h"
#include "runtime/core/env.h"
#include "runtime/core/tensor_format.h"
#include "runtime/core/tensor_ops.h"

namespace ltrun::lua {
namespace {

const char kMeta[] = "lt.Tensor";

struct Box {
  at::Tensor t;
  int64_t bytes;
};

TensorMemory g_mem;  // runtime/core/tensor_ops.h

Box* check_box(lua_State* L, int idx, const char* fn) {
  auto* b = static_cast<Box*>(luaL_testudata(L, idx, kMeta));
  if (!b) fail("{}: argument {}: expected a tensor, got {}", fn, idx, type_name(L, idx));
  return b;
}

// Scalars become "wrapped numbers", so t + 1 keeps an int64 t int64, as in PyTorch.
at::Tensor operand(lua_State* L, int idx, const char* fn) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx);
    at::Tensor s = (v == std::floor(v) && std::fabs(v) < 9.2e18) ? at::scalar_tensor(int64_t(v), at::kLong)
                                                                 : at::scalar_tensor(v, at::kDouble);
    s.unsafeGetTensorImpl()->set_wrapped_number(true);
    return s;
  }
  if (lua_isboolean(L, idx)) return at::scalar_tensor(bool(lua_toboolean(L, idx)), at::kBool);
  return check_tensor(L, idx, fn);
}

// shape from varargs numbers at [from, ...] or one table at `from`; returns the index after it.
// lo: the smallest entry (-1 where view/reshape infer a size; 0 for a new tensor)
std::vector<int64_t> read_shape(lua_State* L, int from, const char* fn, int* next, int64_t lo = -1) {
  std::vector<int64_t> shape;
  if (lua_istable(L, from) && !is_tensor(L, from)) {
    const int n = int(lua_objlen(L, from));
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, from, i);
      if (lua_type(L, -1) != LUA_TNUMBER) fail("{}: shape entries must be numbers", fn);
      shape.push_back(to_integer(L, -1, fmt::format("{}: shape[{}]", fn, i), lo));
      lua_pop(L, 1);
    }
    if (next) *next = from + 1;
    return shape;
  }
  int i = from;
  while (lua_type(L, i) == LUA_TNUMBER) {
    shape.push_back(lo >= 0 ? to_integer(L, i, fmt::format("{}: size {}", fn, i - from + 1), lo)
                            : check_integer(L, i, fn));
    ++i;
  }
  if (next) *next = i;
  return shape;
}

at::TensorOptions read_options(lua_State* L, int idx, const char* fn, c10::ScalarType dflt) {
  at::TensorOptions o = at::TensorOptions().dtype(dflt);
  if (lua_isnoneornil(L, idx)) return o;
  check_options(L, idx, fn, tensor_options_api());
  if (auto d = opt_string(L, idx, "dtype", fn)) o = o.dtype(parse_dtype(*d));
  if (auto d = opt_string(L, idx, "device", fn)) o = o.device(parse_device(*d));
  if (auto r = opt_bool(L, idx, "requires_grad", fn)) o = o.requires_grad(*r);
  return o;
}

// Deepest nesting of rows a table may have: LibTorch tensors of more dimensions than this are
// not a use case, and the walk below recurses once per level.
constexpr size_t kMaxTableDims = 64;

// nested Lua table → flat values + shape; `path` holds the tables from the root to this one,
// so a table that contains itself is reported as a cycle (and not walked forever).
void walk(lua_State* L, int idx, std::vector<const void*>& path, std::vector<int64_t>& shape,
          std::vector<double>& vals, bool& any_bool, const char* fn) {
  idx = abs_index(L, idx);
  const size_t depth = path.size();
  const void* self = lua_topointer(L, idx);
  for (const void* p : path)
    if (p == self) fail("{}: a table contains itself (a cycle {} level(s) deep)", fn, depth);
  if (depth >= kMaxTableDims) fail("{}: a table nested deeper than {} levels", fn, kMaxTableDims);
  check_stack(L, 2, fn);
  path.push_back(self);
  const int64_t n = int64_t(lua_objlen(L, idx));
  if (shape.size() == depth) shape.push_back(n);
  else if (shape[depth] != n) fail("{}: ragged table: a row of length {} where {} was expected", fn, n, shape[depth]);
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, int(i));
    if (lua_type(L, -1) == LUA_TNUMBER) {
      if (shape.size() != depth + 1) fail("{}: ragged table: a number where a row was expected", fn);
      vals.push_back(lua_tonumber(L, -1));
    } else if (lua_isboolean(L, -1)) {
      any_bool = true;
      vals.push_back(lua_toboolean(L, -1) ? 1.0 : 0.0);
    } else if (lua_istable(L, -1)) {
      walk(L, -1, path, shape, vals, any_bool, fn);
    } else {
      fail("{}: tables may hold only numbers, booleans and rows, not {}", fn, type_name(L, -1));
    }
    lua_pop(L, 1);
  }
  path.pop_back();
}

void push_value(lua_State* L, const at::Tensor& t) {  // 0-d → Lua number/boolean
  if (t.scalar_type() == at::kBool) lua_pushboolean(L, t.item<bool>());
  else lua_pushnumber(L, t.item<double>());
}

void push_result(lua_State* L, at::Tensor t) {
  if (t.dim() == 0) push_value(L, t);
  else push_tensor(L, std::move(t));
}

// t[key] for number / table keys: number = select, {a,b[,step]} = slice, ":" or {} = all
at::Tensor index_view(lua_State* L, at::Tensor t, int key, const char* fn) {
  if (lua_type(L, key) == LUA_TNUMBER) {
    LT_CHECK(t.dim() > 0, "{}: cannot index a 0-dimensional tensor", fn);
    return t.select(0, norm_index(check_integer(L, key, fn), t.size(0), 0));
  }
  const int n = int(lua_objlen(L, key));
  int64_t dim = 0;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, key, i);
    const int e = lua_gettop(L);
    LT_CHECK(dim < t.dim(), "{}: {} indices for a tensor with {} dimension(s)", fn, n, t.dim());
    if (lua_type(L, e) == LUA_TNUMBER) {
      t = t.select(dim, norm_index(to_integer(L, e, fmt::format("{}: index", fn)), t.size(dim), dim));
    } else if (lua_type(L, e) == LUA_TSTRING && std::string(lua_tostring(L, e)) == ":") {
      dim++;
    } else if (lua_istable(L, e)) {
      lua_rawgeti(L, e, 1);
      lua_rawgeti(L, e, 2);
      lua_rawgeti(L, e, 3);
      auto bound = [&](int i, const char* what) {
        return lua_isnil(L, i) ? std::nullopt : std::optional<int64_t>(to_integer(L, i, fmt::format("{}: slice {}", fn, what)));
      };
      const int64_t step = bound(-1, "step").value_or(1);
      LT_CHECK(step > 0, "{}: slice step must be positive, got {}", fn, step);
      t = py_slice(t, dim, bound(-3, "start"), bound(-2, "stop"), step);
      lua_pop(L, 3);
      dim++;
    } else {
      fail("{}: index entries are numbers, {{start, stop[, step]}} or \":\", not {}", fn, type_name(L, e));
    }
    lua_pop(L, 1);
  }
  return t;
}

// ---- metamethods ------------------------------------------------------------------------

int m_gc(lua_State* L) {
  auto* b = static_cast<Box*>(lua_touserdata(L, 1));
  g_mem.released(b->bytes);
  b->~Box();
  return 0;
}

int m_tostring(lua_State* L) {
  push(L, format_tensor(check_box(L, 1, "tostring")->t));
  return 1;
}

int m_len(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "#");
  lua_pushinteger(L, t.dim() == 0 ? 0 : lua_Integer(t.size(0)));
  return 1;
}

int m_index(lua_State* L) {
  if (lua_type(L, 2) == LUA_TSTRING) {
    // methods first (a table in the metatable's upvalue), then properties
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);
    const std::string k = lua_tostring(L, 2);
    at::Tensor& t = check_tensor(L, 1, "tensor");
    if (k == "shape") push_array(L, t.sizes().vec());
    else if (k == "dtype") push(L, dtype_name(t.scalar_type()));
    else if (k == "device") push(L, t.device().str());
    else if (k == "ndim") lua_pushinteger(L, lua_Integer(t.dim()));
    else if (k == "requires_grad") lua_pushboolean(L, t.requires_grad());
    else if (k == "is_leaf") lua_pushboolean(L, t.is_leaf());
    else if (k == "grad") {
      if (t.grad().defined()) push_tensor(L, t.grad()); else lua_pushnil(L);
    } else lua_pushnil(L);
    return 1;
  }
  at::Tensor& t = check_tensor(L, 1, "tensor[]");
  push_result(L, index_view(L, t, 2, "tensor[]"));
  return 1;
}

int m_newindex(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "tensor[]=");
  if (lua_type(L, 2) == LUA_TSTRING) fail("tensor: cannot set field '{}'", lua_tostring(L, 2));
  at::Tensor view = index_view(L, t, 2, "tensor[]=");
  at::NoGradGuard guard;
  if (lua_type(L, 3) == LUA_TNUMBER) view.fill_(lua_tonumber(L, 3));
  else if (lua_isboolean(L, 3)) view.fill_(bool(lua_toboolean(L, 3)));
  else view.copy_(to_tensor(L, 3, "tensor[]=", view.scalar_type()));
  return 0;
}

// t:add(u), t + u, t:eq(u), ...: runtime/core/tensor_ops.h's binary_ops()[upvalue 1]; one
// operand may be a number or a boolean, the other must be a tensor.
int t_binary(lua_State* L) {
  const BinaryOp& op = binary_ops()[size_t(lua_tointeger(L, lua_upvalueindex(1)))];
  if (!is_tensor(L, 1)) check_tensor(L, 2, op.name);
  push_tensor(L, op.fn(operand(L, 1, op.name), operand(L, 2, op.name)));
  return 1;
}

int m_unm(lua_State* L) {
  push_tensor(L, at::neg(check_tensor(L, 1, "-")));
  return 1;
}

// ---- methods --------------------------------------------------------------------------------

// t:exp(), t:float(), ...: runtime/core/tensor_ops.h's unary_ops()[upvalue 1]
int t_unary(lua_State* L) {
  const UnaryOp& op = unary_ops()[size_t(lua_tointeger(L, lua_upvalueindex(1)))];
  push_tensor(L, op.fn(check_tensor(L, 1, op.name)));
  return 1;
}

// One-line methods: T returns a tensor, SELF changes t in place and returns it, NUM a number.
#define LT_T(name, fn, expr)                  \
  int name(lua_State* L) {                    \
    at::Tensor& t = check_tensor(L, 1, fn);   \
    push_tensor(L, expr);                     \
    return 1;                                 \
  }
#define LT_SELF(name, fn, expr)               \
  int name(lua_State* L) {                    \
    at::Tensor& t = check_tensor(L, 1, fn);   \
    expr;                                     \
    lua_settop(L, 1);                         \
    return 1;                                 \
  }
#define LT_NUM(name, fn, expr)                \
  int name(lua_State* L) {                    \
    at::Tensor& t = check_tensor(L, 1, fn);   \
    lua_pushnumber(L, expr);                  \
    return 1;                                 \
  }
LT_T(t_matmul, "matmul", at::matmul(t, check_tensor(L, 2, "matmul")))
LT_T(t_transpose, "transpose", t.transpose(check_integer(L, 2, "transpose"), check_integer(L, 3, "transpose")))
LT_T(t_squeeze, "squeeze", lua_isnoneornil(L, 2) ? t.squeeze() : t.squeeze(norm_dim(t, check_integer(L, 2, "squeeze"))))
LT_T(t_unsqueeze, "unsqueeze", t.unsqueeze(check_integer(L, 2, "unsqueeze")))
LT_T(t_narrow, "narrow", t.narrow(norm_dim(t, check_integer(L, 2, "narrow")), check_integer(L, 3, "narrow"), check_integer(L, 4, "narrow")))
LT_T(t_index_select, "index_select", t.index_select(norm_dim(t, check_integer(L, 2, "index_select")), to_tensor(L, 3, "index_select", at::kLong).to(at::kLong).to(t.device())))
LT_T(t_gather, "gather", t.gather(norm_dim(t, check_integer(L, 2, "gather")), to_tensor(L, 3, "gather", at::kLong).to(at::kLong).to(t.device())))
LT_T(t_masked_fill, "masked_fill", t.masked_fill(to_tensor(L, 2, "masked_fill", at::kBool).to(at::kBool), check_number(L, 3, "masked_fill")))
LT_SELF(t_fill, "fill", t.fill_(check_number(L, 2, "fill")))
LT_SELF(t_zero, "zero", t.zero_())
LT_SELF(t_copy, "copy", t.copy_(to_tensor(L, 2, "copy", t.scalar_type())))
LT_SELF(t_requires_grad_, "requires_grad_", t.requires_grad_(lua_isnoneornil(L, 2) ? true : lua_toboolean(L, 2) != 0))
LT_NUM(t_numel, "numel", double(t.numel()))
LT_NUM(t_dim, "dim", double(t.dim()))
LT_NUM(t_nbytes, "nbytes", double(t.numel() * int64_t(t.element_size())))
#undef LT_T
#undef LT_SELF
#undef LT_NUM

int t_size(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "size");
  if (lua_isnoneornil(L, 2)) {
    push_array(L, t.sizes().vec());
    return 1;
  }
  lua_pushnumber(L, double(t.size(norm_dim(t, check_integer(L, 2, "size")))));
  return 1;
}

int t_item(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "item");
  LT_CHECK(t.numel() == 1, "item: tensor has {} elements, expected 1", t.numel());
  push_value(L, t.reshape({}));
  return 1;
}

void push_table(lua_State* L, const at::Tensor& t) {
  if (t.dim() == 0) return push_value(L, t);
  const int64_t n = t.size(0);
  lua_createtable(L, int(n), 0);
  for (int64_t i = 0; i < n; i++) {
    push_table(L, t[i]);
    lua_rawseti(L, -2, int(i + 1));
  }
}

int t_totable(lua_State* L) {
  at::Tensor t = check_tensor(L, 1, "totable").detach().to(at::kCPU);
  if (t.scalar_type() != at::kBool) t = t.to(at::kDouble);
  push_table(L, t);
  return 1;
}

int t_to(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "to");
  if (lua_type(L, 2) == LUA_TSTRING) {
    const std::string s = lua_tostring(L, 2);
    const bool is_device = s == "cpu" || s == "auto" || s.rfind("cuda", 0) == 0;
    push_tensor(L, is_device ? t.to(parse_device(s)) : t.to(parse_dtype(s)));
    return 1;
  }
  at::TensorOptions o = read_options(L, 2, "to", t.scalar_type());
  push_tensor(L, t.to(o.device_opt().value_or(t.device()), o.dtype().toScalarType()));
  return 1;
}

int t_cuda(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "cuda");
  std::string spec = lua_isnoneornil(L, 2) ? "cuda" : "cuda:" + std::to_string(check_integer(L, 2, "cuda"));
  push_tensor(L, t.to(parse_device(spec)));
  return 1;
}

// methods taking a shape (varargs or one table)
#define LT_SHAPED(name, op)                                    \
  int name(lua_State* L) {                                     \
    at::Tensor& t = check_tensor(L, 1, #op);                   \
    push_tensor(L, t.op(read_shape(L, 2, #op, nullptr)));      \
    return 1;                                                  \
  }
LT_SHAPED(t_view, view)
LT_SHAPED(t_reshape, reshape)
LT_SHAPED(t_expand, expand)
LT_SHAPED(t_permute, permute)
#undef LT_SHAPED

int t_select(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "select");
  const int64_t d = norm_dim(t, check_integer(L, 2, "select"));
  push_result(L, t.select(d, norm_index(check_integer(L, 3, "select"), t.size(d), d)));
  return 1;
}

int t_slice(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "slice");
  auto opt = [&](int i) { return lua_isnoneornil(L, i) ? std::nullopt : std::optional<int64_t>(check_integer(L, i, "slice")); };
  const int64_t step = opt(5).value_or(1);
  LT_CHECK(step > 0, "slice: step must be positive, got {}", step);
  push_tensor(L, py_slice(t, norm_dim(t, check_integer(L, 2, "slice")), opt(3), opt(4), step));
  return 1;
}

#define LT_INPLACE(name, op)                                                     \
  int name(lua_State* L) {                                                       \
    at::Tensor& t = check_tensor(L, 1, #name);                                   \
    t.op(operand(L, 2, #name));                                               \
    lua_settop(L, 1);                                                            \
    return 1;                                                                    \
  }
LT_INPLACE(t_add_, add_)
LT_INPLACE(t_sub_, sub_)
LT_INPLACE(t_mul_, mul_)
LT_INPLACE(t_div_, div_)
#undef LT_INPLACE

int t_clamp(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "clamp");
  c10::optional<at::Scalar> lo, hi;
  if (!lua_isnoneornil(L, 2)) lo = check_number(L, 2, "clamp");
  if (!lua_isnoneornil(L, 3)) hi = check_number(L, 3, "clamp");
  push_tensor(L, at::clamp(t, lo, hi));
  return 1;
}

// methods taking an optional dimension (default -1)
#define LT_ALONG(name, op)                                                                  \
  int name(lua_State* L) {                                                                  \
    at::Tensor& t = check_tensor(L, 1, #op);                                                \
    push_tensor(L, t.op(lua_isnoneornil(L, 2) ? -1 : norm_dim(t, check_integer(L, 2, #op)))); \
    return 1;                                                                               \
  }
LT_ALONG(t_softmax, softmax)
LT_ALONG(t_log_softmax, log_softmax)
LT_ALONG(t_cumsum, cumsum)
#undef LT_ALONG

// Reductions (runtime/core/tensor_ops.h's reductions()[upvalue 1]): t:sum() over everything
// → number; t:sum(dim[, keepdim]) → tensor.
int t_reduce(lua_State* L) {
  const NamedReduction& op = reductions()[size_t(lua_tointeger(L, lua_upvalueindex(1)))];
  at::Tensor& t = check_tensor(L, 1, op.name);
  if (!lua_isnoneornil(L, 2)) {
    push_tensor(L, reduce(t, op.r, check_integer(L, 2, op.name), lua_toboolean(L, 3) != 0));
    return 1;
  }
  const at::Tensor r = reduce(t, op.r);
  if (t.requires_grad()) push_tensor(L, r);  // keep the graph for backward()
  else push_value(L, r);
  return 1;
}

// t:max() → number; t:max(dim[, keepdim]) → values, indices (as PyTorch)
template <bool Max>
int t_maxmin(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, Max ? "max" : "min");
  if (lua_isnoneornil(L, 2)) {
    push_value(L, Max ? t.max() : t.min());
    return 1;
  }
  const int64_t d = norm_dim(t, check_integer(L, 2, Max ? "max" : "min"));
  auto [v, i] = Max ? t.max(d, lua_toboolean(L, 3) != 0) : t.min(d, lua_toboolean(L, 3) != 0);
  push_tensor(L, v);
  push_tensor(L, i);
  return 2;
}

template <bool Max>
int t_argmaxmin(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, Max ? "argmax" : "argmin");
  if (lua_isnoneornil(L, 2)) {
    push_value(L, Max ? t.argmax() : t.argmin());
    return 1;
  }
  const int64_t d = norm_dim(t, check_integer(L, 2, "argmax"));
  push_tensor(L, Max ? t.argmax(d, lua_toboolean(L, 3) != 0) : t.argmin(d, lua_toboolean(L, 3) != 0));
  return 1;
}

int t_topk(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "topk");
  const int64_t k = check_integer(L, 2, "topk");
  const int64_t d = lua_isnoneornil(L, 3) ? t.dim() - 1 : norm_dim(t, check_integer(L, 3, "topk"));
  LT_CHECK(k >= 0 && k <= t.size(d), "topk: k={} but dimension {} has size {}", k, d, t.size(d));
  const bool largest = lua_isnoneornil(L, 4) ? true : lua_toboolean(L, 4) != 0;
  auto [v, i] = t.topk(k, d, largest, /*sorted=*/true);
  push_tensor(L, v);
  push_tensor(L, i);
  return 2;
}

int t_sort(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "sort");
  const int64_t d = lua_isnoneornil(L, 2) ? -1 : check_integer(L, 2, "sort");
  auto [v, i] = t.sort(d, lua_toboolean(L, 3) != 0);
  push_tensor(L, v);
  push_tensor(L, i);
  return 2;
}

int t_equal(lua_State* L) {
  at::Tensor& a = check_tensor(L, 1, "equal");
  at::Tensor& b = check_tensor(L, 2, "equal");
  lua_pushboolean(L, a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && a.equal(b));
  return 1;
}

int t_allclose(lua_State* L) {
  at::Tensor& a = check_tensor(L, 1, "allclose");
  at::Tensor b = to_tensor(L, 2, "allclose", a.scalar_type());
  const double rtol = lua_isnoneornil(L, 3) ? 1e-5 : check_number(L, 3, "allclose");
  const double atol = lua_isnoneornil(L, 4) ? 1e-8 : check_number(L, 4, "allclose");
  lua_pushboolean(L, a.sizes() == b.sizes() && a.allclose(b.to(a.scalar_type()), rtol, atol));
  return 1;
}

int t_backward(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "backward");
  if (lua_isnoneornil(L, 2)) t.backward();
  else t.backward(check_tensor(L, 2, "backward"));
  return 0;
}

int t_zero_grad(lua_State* L) {
  at::Tensor& t = check_tensor(L, 1, "zero_grad");
  if (t.grad().defined()) t.mutable_grad() = at::Tensor();
  return 0;
}

int t_free(lua_State* L) {
  Box* b = check_box(L, 1, "free");
  g_mem.released(b->bytes);
  b->bytes = 0;
  b->t = at::Tensor();
  return 0;
}

int t_is_contiguous(lua_State* L) {
  lua_pushboolean(L, check_tensor(L, 1, "is_contiguous").is_contiguous());
  return 1;
}

// ---- constructors and functions -------------------------------------------------------------

int l_tensor(lua_State* L) {
  if (is_tensor(L, 1)) {
    at::Tensor& src = check_tensor(L, 1, "lt.tensor");
    at::TensorOptions o = read_options(L, 2, "lt.tensor", src.scalar_type());
    push_tensor(L, src.to(o.device_opt().value_or(src.device()), o.dtype().toScalarType(), false, true));
    return 1;
  }
  if (lua_type(L, 1) == LUA_TNUMBER) {
    int next = 0;
    auto shape = read_shape(L, 1, "lt.tensor", &next, 0);
    const at::TensorOptions o = read_options(L, next, "lt.tensor", at::kFloat);
    push_tensor(L, checked_new("lt.tensor", shape, o, [&] { return at::zeros(shape, o); }));
    return 1;
  }
  check_table(L, 1, "lt.tensor");
  std::vector<int64_t> shape;
  std::vector<double> vals;
  bool any_bool = false;
  std::vector<const void*> path;
  walk(L, 1, path, shape, vals, any_bool, "lt.tensor");
  at::TensorOptions o = read_options(L, 2, "lt.tensor", any_bool ? at::kBool : at::kFloat);
  at::Tensor t = at::tensor(vals, at::kDouble).reshape(shape).to(o.dtype().toScalarType());
  push_tensor(L, t.to(o.device_opt().value_or(at::kCPU)).set_requires_grad(o.requires_grad()));
  return 1;
}

template <int Kind>  // 0 zeros, 1 ones, 2 randn, 3 rand
int l_filled(lua_State* L) {
  static const char* names[] = {"lt.zeros", "lt.ones", "lt.randn", "lt.rand"};
  int next = 0;
  auto shape = read_shape(L, 1, names[Kind], &next, 0);
  at::TensorOptions o = read_options(L, next, names[Kind], at::kFloat);
  at::TensorOptions plain = o.requires_grad(false);
  at::Tensor t = checked_new(names[Kind], shape, plain, [&] {
    return Kind == 0 ? at::zeros(shape, plain) : Kind == 1 ? at::ones(shape, plain)
         : Kind == 2 ? at::randn(shape, plain) : at::rand(shape, plain);
  });
  push_tensor(L, t.set_requires_grad(o.requires_grad()));
  return 1;
}

int l_full(lua_State* L) {
  int next = 0;
  auto shape = read_shape(L, 1, "lt.full", &next, 0);
  const double v = check_number(L, next, "lt.full");
  const at::TensorOptions o = read_options(L, next + 1, "lt.full", at::kFloat);
  push_tensor(L, checked_new("lt.full", shape, o, [&] { return at::full(shape, v, o); }));
  return 1;
}

int l_arange(lua_State* L) {  // arange(stop) | arange(start, stop[, step]) [, opts]; stop excluded
  double start = 0, stop, step = 1;
  int opts = 2;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    start = check_number(L, 1, "lt.arange");
    stop = check_number(L, 2, "lt.arange");
    opts = 3;
    if (lua_type(L, 3) == LUA_TNUMBER) step = check_number(L, 3, "lt.arange"), opts = 4;
  } else {
    stop = check_number(L, 1, "lt.arange");
  }
  const bool ints = start == std::floor(start) && stop == std::floor(stop) && step == std::floor(step);
  const at::TensorOptions o = read_options(L, opts, "lt.arange", ints ? at::kLong : at::kFloat);
  const std::vector<int64_t> shape{arange_size(start, stop, step, "lt.arange")};
  push_tensor(L, checked_new("lt.arange", shape, o, [&] { return at::arange(start, stop, step, o); }));
  return 1;
}

int l_linspace(lua_State* L) {
  const double a = check_number(L, 1, "lt.linspace"), b = check_number(L, 2, "lt.linspace");
  const int64_t n = check_integer(L, 3, "lt.linspace", 0);
  const at::TensorOptions o = read_options(L, 4, "lt.linspace", at::kFloat);
  push_tensor(L, checked_new("lt.linspace", {n}, o, [&] { return at::linspace(a, b, n, o); }));
  return 1;
}

int l_eye(lua_State* L) {
  const int64_t n = check_integer(L, 1, "lt.eye", 0);
  const at::TensorOptions o = read_options(L, 2, "lt.eye", at::kFloat);
  push_tensor(L, checked_new("lt.eye", {n, n}, o, [&] { return at::eye(n, o); }));
  return 1;
}

int l_randint(lua_State* L) {  // randint(low, high, shape[, opts]); high excluded
  const int64_t lo = check_integer(L, 1, "lt.randint"), hi = check_integer(L, 2, "lt.randint");
  int next = 0;
  auto shape = read_shape(L, 3, "lt.randint", &next, 0);
  const at::TensorOptions o = read_options(L, next, "lt.randint", at::kLong);
  push_tensor(L, checked_new("lt.randint", shape, o, [&] { return at::randint(lo, hi, shape, o); }));
  return 1;
}

std::vector<at::Tensor> tensor_list(lua_State* L, int idx, const char* fn) {
  check_table(L, idx, fn);
  std::vector<at::Tensor> out;
  const int n = int(lua_objlen(L, idx));
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    out.push_back(check_tensor(L, lua_gettop(L), fn));
    lua_pop(L, 1);
  }
  LT_CHECK(!out.empty(), "{}: expected a non-empty list of tensors", fn);
  return out;
}

int l_cat(lua_State* L) {
  push_tensor(L, at::cat(tensor_list(L, 1, "lt.cat"), lua_isnoneornil(L, 2) ? 0 : check_integer(L, 2, "lt.cat")));
  return 1;
}

int l_stack(lua_State* L) {
  push_tensor(L, at::stack(tensor_list(L, 1, "lt.stack"), lua_isnoneornil(L, 2) ? 0 : check_integer(L, 2, "lt.stack")));
  return 1;
}

int l_where(lua_State* L) {
  at::Tensor c = check_tensor(L, 1, "lt.where").to(at::kBool);
  push_tensor(L, at::where(c, operand(L, 2, "lt.where"), operand(L, 3, "lt.where")));
  return 1;
}

int l_is_tensor(lua_State* L) {
  lua_pushboolean(L, is_tensor(L, 1));
  return 1;
}

// lt.no_grad(fn, ...) runs fn with autograd off and returns its results. The guard lives
// in this C frame while Lua runs; a Lua error unwinds through it as a C++ exception
// (LuaJIT on x64), which restores the grad mode.
int l_no_grad(lua_State* L) {
  check_function(L, 1, "lt.no_grad");
  at::NoGradGuard guard;
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

int l_manual_seed(lua_State* L) {
  const int64_t s = check_integer(L, 1, "lt.manual_seed");
  seed_all(uint64_t(s));
  return 0;
}

int l_memory(lua_State* L) {
  lua_createtable(L, 0, 4);
  set_field(L, "tensor_bytes", double(g_mem.live));
  set_field(L, "gc_threshold", double(g_mem.threshold));
  set_field(L, "forced_collections", double(g_mem.collections));
  set_field(L, "lua_bytes", lua_gc(L, LUA_GCCOUNT, 0) * 1024.0);
  return 1;
}

int l_gc_threshold(lua_State* L) {
  const int64_t old = g_mem.threshold;
  if (!lua_isnoneornil(L, 1)) g_mem.set_threshold(check_integer(L, 1, "lt.gc_threshold"));
  lua_pushnumber(L, double(old));
  return 1;
}

}  // namespace

void push_tensor(lua_State* L, at::Tensor t) {
  const int64_t bytes = storage_bytes(t);
  if (g_mem.allocated(bytes)) lua_gc(L, LUA_GCCOLLECT, 0);
  new (lua_newuserdata(L, sizeof(Box))) Box{std::move(t), bytes};
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
}

void set_tensor(lua_State* L, const char* key, at::Tensor t) {
  push_tensor(L, std::move(t));
  lua_setfield(L, -2, key);
}

bool is_tensor(lua_State* L, int idx) { return luaL_testudata(L, idx, kMeta) != nullptr; }

at::Tensor& check_tensor(lua_State* L, int idx, const char* fn) {
  Box* b = check_box(L, idx, fn);
  if (!b->t.defined()) fail("{}: argument {}: the tensor was freed (t:free())", fn, idx);
  return b->t;
}

at::Tensor to_tensor(lua_State* L, int idx, const char* fn, c10::ScalarType number_dtype) {
  if (is_tensor(L, idx)) return check_tensor(L, idx, fn);
  if (lua_type(L, idx) == LUA_TNUMBER) return at::scalar_tensor(lua_tonumber(L, idx), number_dtype);
  if (lua_istable(L, idx)) {
    std::vector<int64_t> shape;
    std::vector<double> vals;
    bool any_bool = false;
    std::vector<const void*> path;
    walk(L, idx, path, shape, vals, any_bool, fn);
    return at::tensor(vals, at::kDouble).reshape(shape).to(any_bool ? at::kBool : number_dtype);
  }
  fail("{}: argument {}: expected a tensor, number or table, got {}", fn, idx, type_name(L, idx));
}

const luaL_Reg kMethods[] = {
    {"size", LT_FN(t_size)}, {"numel", LT_FN(t_numel)}, {"dim", LT_FN(t_dim)}, {"item", LT_FN(t_item)},
    {"totable", LT_FN(t_totable)}, {"to", LT_FN(t_to)}, {"cuda", LT_FN(t_cuda)}, {"view", LT_FN(t_view)},
    {"reshape", LT_FN(t_reshape)}, {"expand", LT_FN(t_expand)}, {"permute", LT_FN(t_permute)},
    {"transpose", LT_FN(t_transpose)}, {"squeeze", LT_FN(t_squeeze)}, {"unsqueeze", LT_FN(t_unsqueeze)},
    {"narrow", LT_FN(t_narrow)}, {"select", LT_FN(t_select)}, {"slice", LT_FN(t_slice)},
    {"index_select", LT_FN(t_index_select)}, {"gather", LT_FN(t_gather)}, {"masked_fill", LT_FN(t_masked_fill)},
    {"fill", LT_FN(t_fill)}, {"zero", LT_FN(t_zero)}, {"copy", LT_FN(t_copy)}, {"add_", LT_FN(t_add_)},
    {"sub_", LT_FN(t_sub_)}, {"mul_", LT_FN(t_mul_)}, {"div_", LT_FN(t_div_)}, {"matmul", LT_FN(t_matmul)},
    {"clamp", LT_FN(t_clamp)}, {"softmax", LT_FN(t_softmax)}, {"log_softmax", LT_FN(t_log_softmax)},
    {"cumsum", LT_FN(t_cumsum)}, {"max", LT_FN(t_maxmin<true>)}, {"min", LT_FN(t_maxmin<false>)},
    {"argmax", LT_FN(t_argmaxmin<true>)}, {"argmin", LT_FN(t_argmaxmin<false>)}, {"topk", LT_FN(t_topk)},
    {"sort", LT_FN(t_sort)}, {"equal", LT_FN(t_equal)}, {"allclose", LT_FN(t_allclose)},
    {"backward", LT_FN(t_backward)}, {"requires_grad_", LT_FN(t_requires_grad_)}, {"zero_grad", LT_FN(t_zero_grad)},
    {"free", LT_FN(t_free)}, {"nbytes", LT_FN(t_nbytes)}, {"is_contiguous", LT_FN(t_is_contiguous)},
    {nullptr, nullptr}};
const luaL_Reg kMetaMethods[] = {
    {"__gc", m_gc},  // never throws: not wrapped
    {"__tostring", LT_FN(m_tostring)}, {"__len", LT_FN(m_len)}, {"__newindex", LT_FN(m_newindex)},
    {"__unm", LT_FN(m_unm)}, {nullptr, nullptr}};

const luaL_Reg kFunctions[] = {
    {"tensor", LT_FN(l_tensor)}, {"zeros", LT_FN(l_filled<0>)}, {"ones", LT_FN(l_filled<1>)},
    {"randn", LT_FN(l_filled<2>)}, {"rand", LT_FN(l_filled<3>)}, {"full", LT_FN(l_full)},
    {"arange", LT_FN(l_arange)}, {"linspace", LT_FN(l_linspace)}, {"eye", LT_FN(l_eye)},
    {"randint", LT_FN(l_randint)}, {"cat", LT_FN(l_cat)}, {"stack", LT_FN(l_stack)},
    {"where", LT_FN(l_where)}, {"is_tensor", LT_FN(l_is_tensor)}, {"no_grad", LT_FN(l_no_grad)},
    {"manual_seed", LT_FN(l_manual_seed)}, {"memory", LT_FN(l_memory)},
    {"gc_threshold", LT_FN(l_gc_threshold)}, {nullptr, nullptr}};

// t[name] = a closure of f with upvalue i, for the table on top of the stack
void set_op(lua_State* L, const char* name, lua_CFunction f, size_t i) {
  lua_pushinteger(L, lua_Integer(i));
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
}

void register_tensor(lua_State* L) {
  luaL_newmetatable(L, kMeta);
  set_funcs(L, kMetaMethods);
  set_field(L, "__name", kMeta);
  lua_newtable(L);  // methods, the upvalue of __index
  set_funcs(L, kMethods);
  for (size_t i = 0; i < unary_ops().size(); i++) set_op(L, unary_ops()[i].name, LT_FN(t_unary), i);
  for (size_t i = 0; i < reductions().size(); i++) set_op(L, reductions()[i].name, LT_FN(t_reduce), i);
  for (size_t i = 0; i < binary_ops().size(); i++) {
    set_op(L, binary_ops()[i].name, LT_FN(t_binary), i);
    if (binary_ops()[i].meta) {
      lua_pushvalue(L, -2);  // the metatable
      set_op(L, binary_ops()[i].meta, LT_FN(t_binary), i);
      lua_pop(L, 1);
    }
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "methods");
  lua_pushcclosure(L, LT_FN(m_index), 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);

  lua_getglobal(L, "lt");
  set_funcs(L, kFunctions);
  lua_pop(L, 1);
}

}  // namespace ltrun::lua

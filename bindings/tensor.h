// bindings/tensor.h: lt.Tensor userdata for other binding files (model, diag, ...).
#pragma once
#include <ATen/core/Tensor.h>
#include <lua.hpp>

#include <vector>

namespace ltrun::lua {

// Pushes a new userdata owning t; counts its bytes toward the GC threshold (see tensor.cpp).
void push_tensor(lua_State* L, at::Tensor t);
// t[key] = a tensor userdata, for the table on top of the stack
void set_tensor(lua_State* L, const char* key, at::Tensor t);
bool is_tensor(lua_State* L, int idx);
at::Tensor& check_tensor(lua_State* L, int idx, const char* fn);
// A tensor from a tensor argument, a number, or a (nested) table of numbers/booleans.
at::Tensor to_tensor(lua_State* L, int idx, const char* fn, c10::ScalarType number_dtype);
void register_tensor(lua_State* L);

}  // namespace ltrun::lua

// runtime/core/tensor_format.h: PyTorch-like text for a tensor (what `print(t)` shows in Lua).
#pragma once
#include <string>

namespace at { class Tensor; }

namespace ltrun {

// `tensor([[1.0000, 2.0000], ...], dtype=..., device=...)`; long dimensions keep the first and
// last 3 entries around "...", so printing a vocab-sized row stays short.
std::string format_tensor(const at::Tensor& t);

}  // namespace ltrun

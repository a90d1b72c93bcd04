// runtime/core/tensor_format.cpp: formatting for print(); shared width per tensor like PyTorch.
#include "runtime/core/tensor_format.h"

#include <ATen/ATen.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "runtime/core/device.h"

namespace ltrun {
namespace {

constexpr int64_t kEdge = 3;        // entries kept at each end of a summarised dimension
constexpr int64_t kSummarise = 1000;  // numel above which dimensions are summarised

struct Style {
  bool is_float = false, is_bool = false, sci = false;
  int width = 1;
};

std::string fmt_one(double v, const Style& s) {
  if (s.is_bool) return v != 0 ? "true" : "false";
  if (!s.is_float) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return s.sci ? fmt::format("{:.4e}", v) : fmt::format("{:.4f}", v);
}

// Rows of a matrix go one per line; blocks of higher dimensions are separated by blank lines.
// `indent` is the column where this level's '[' stands.
void emit(std::string& out, const at::Tensor& t, const Style& s, bool summarise, int indent) {
  if (t.dim() == 0) {
    std::string v = fmt_one(t.item<double>(), s);
    out += std::string(std::max<int>(0, s.width - int(v.size())), ' ') + v;
    return;
  }
  const std::string sep = t.dim() == 1 ? ", " : "," + std::string(t.dim() - 1, '\n') +
                                                   std::string(indent + 1, ' ');
  out += '[';
  const int64_t n = t.size(0);
  for (int64_t i = 0; i < n; i++) {
    if (summarise && n > 2 * kEdge && i == kEdge) {
      out += "..." + sep;
      i = n - kEdge;
    }
    emit(out, t[i], s, summarise, indent + 1);
    if (i + 1 < n) out += sep;
  }
  out += ']';
}

}  // namespace

std::string format_tensor(const at::Tensor& t) {
  if (!t.defined()) return "tensor(<freed>)";
  at::Tensor c = t.detach().to(at::kCPU);
  Style s;
  s.is_bool = c.scalar_type() == at::kBool;
  s.is_float = c.is_floating_point();
  const bool summarise = c.numel() > kSummarise;
  if (c.numel() > 0) {
    at::Tensor d = c.to(at::kDouble);
    if (s.is_float) {
      at::Tensor finite = d.masked_select(at::isfinite(d)).abs();
      if (finite.numel() > 0) {
        double mx = finite.max().item<double>();
        double mn = finite.min().item<double>();
        s.sci = mx >= 1e8 || (mn > 0 && mn < 1e-4);
      }
    }
    // width = widest printed entry (of those shown), so that columns line up
    at::Tensor flat = d.flatten();
    const int64_t n = flat.numel();
    auto acc = flat.accessor<double, 1>();
    for (int64_t i = 0; i < n; i++) {
      if (summarise && i == kEdge * kEdge) i = std::max(i, n - kEdge * kEdge);
      s.width = std::max<int>(s.width, int(fmt_one(acc[i], s).size()));
    }
    std::string out = "tensor(";
    emit(out, d, s, summarise, int(out.size()));
    std::string extra;
    if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kLong && t.scalar_type() != at::kBool)
      extra += ", dtype=" + dtype_name(t.scalar_type());
    if (!t.device().is_cpu()) extra += ", device=" + t.device().str();
    if (t.requires_grad()) extra += ", requires_grad=true";
    return out + extra + ")";
  }
  return fmt::format("tensor([], size=[{}], dtype={})", fmt::join(t.sizes(), ", "),
                     dtype_name(t.scalar_type()));
}

}  // namespace ltrun

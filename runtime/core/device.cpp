// runtime/core/device.cpp: device/dtype parsing and global seeding against LibTorch 1.13 and 2.x.
#include "runtime/core/device.h"

#include <ATen/ATen.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <random>

#include "runtime/core/error.h"

namespace ltrun {

int cuda_device_count() { return at::hasCUDA() ? int(at::detail::getCUDAHooks().getNumGPUs()) : 0; }

bool cuda_available() { return cuda_device_count() > 0; }

void synchronize(const c10::Device& d) {
  if (!d.is_cuda() || !at::hasCUDA()) return;
  const auto& hooks = at::detail::getCUDAHooks();
  const auto index = d.has_index() ? d.index() : c10::DeviceIndex(0);
  // nothing ran on the GPU in this process yet (a scan's parent): no context to make for it
  if (hooks.hasPrimaryContext(index)) hooks.deviceSynchronize(index);
}

c10::Device parse_device(const std::string& spec) {
  if (spec == "auto") return cuda_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    if (!at::hasCUDA())
      fail("--device {}: this ltrun is built against a LibTorch without CUDA (torch {}); use --device cpu",
           spec, torch_version());
    int n = at::detail::getCUDAHooks().getNumGPUs();
    if (n == 0) fail("--device {}: no CUDA GPU is visible (CUDA_VISIBLE_DEVICES={})", spec,
                     getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    int index = 0;
    if (spec.size() > 5) {
      const std::string num = spec.substr(5);
      LT_CHECK(!num.empty() && num.find_first_not_of("0123456789") == std::string::npos,
               "--device {}: expected cuda:N with N a GPU index", spec);
      index = std::stoi(num);
    }
    LT_CHECK(index < n, "--device {}: only {} GPU(s) visible (0..{})", spec, n, n - 1);
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  fail("--device {}: expected auto, cpu, cuda or cuda:N", spec);
}

std::string device_name(const c10::Device& d) { return d.str(); }

namespace {
struct DtypeName { const char* name; c10::ScalarType type; };
const DtypeName kDtypes[] = {
    {"float32", c10::kFloat},  {"float16", c10::kHalf},  {"bfloat16", c10::kBFloat16},
    {"float64", c10::kDouble}, {"int64", c10::kLong},    {"int32", c10::kInt},
    {"int16", c10::kShort},    {"int8", c10::kChar},     {"uint8", c10::kByte},
    {"bool", c10::kBool},      {"float", c10::kFloat},   {"double", c10::kDouble},
    {"half", c10::kHalf},      {"bf16", c10::kBFloat16}, {"fp32", c10::kFloat},
    {"fp16", c10::kHalf},      {"long", c10::kLong},     {"int", c10::kInt},
};
}  // namespace

c10::ScalarType parse_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.type;
  fail("unknown dtype '{}' (expected float32, bfloat16, float16, float64, int64, int32, int16, "
       "int8, uint8 or bool)", name);
}

std::string dtype_name(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.name;  // first match is the canonical name
  return c10::toString(t);
}

void seed_all(uint64_t seed) { at::manual_seed(seed); }

uint64_t fresh_seed() {
  std::random_device rd;
  return uint64_t(rd());  // 32 bits: prints exactly in Lua and reads easily in `ltrun runs`
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace ltrun

// runtime/core/device.h: device selection (--device auto|cpu|cuda[:N]), seeding, versions.
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>

namespace ltrun {

bool cuda_available();
int cuda_device_count();  // GPUs visible to this LibTorch (0 without CUDA)
// "auto" picks cuda:0 when a GPU is usable, else cpu. Asking for CUDA where there is none
// is an error that says why (this LibTorch has no CUDA, or no GPU is visible).
c10::Device parse_device(const std::string& spec);
std::string device_name(const c10::Device& d);
// Waits until the GPU has done the work queued for device `d` (a no-op for the CPU, and for a
// GPU this process has not used yet): a clock read after it times that work too (lt.clock).
void synchronize(const c10::Device& d);

// dtype names as PyTorch spells them ("float32", "bfloat16", ...), plus short aliases.
c10::ScalarType parse_dtype(const std::string& name);
std::string dtype_name(c10::ScalarType t);

// Seeds LibTorch's CPU and CUDA generators; the Lua RNG is seeded by the bindings.
void seed_all(uint64_t seed);
uint64_t fresh_seed();  // from the OS, for `--seed fresh`

std::string torch_version();

}  // namespace ltrun

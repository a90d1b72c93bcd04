// runtime/kernels/rmsnorm_launch.h: the C-style launchers of rmsnorm.cu (no torch, no CUDA
// headers here, so C++ files can call them without nvcc).
#pragma once
#include <cstdint>

namespace ltrun::kernels {

// Returns the cudaError_t of the launch (0 = success). `stream` is a cudaStream_t.
int launch_rmsnorm_f32(const float* x, const float* w, float* y, int64_t rows, int64_t cols,
                       float eps, void* stream);
// bf16 in/out passed as raw 16-bit words; accumulation in fp32.
int launch_rmsnorm_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t cols,
                        float eps, void* stream);

}  // namespace ltrun::kernels

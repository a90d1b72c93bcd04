// runtime/kernels/rmsnorm.cu: fused RMSNorm, one block per row: a pass for sum(x^2) reduced
// in fp32 through warp shuffles and shared memory, then a pass writing w * T(x * rsqrt(ms + eps)).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "runtime/kernels/rmsnorm_launch.h"

namespace ltrun::kernels {
namespace {

// ---------------------------------------------------------------------------------------
// kernels

__device__ inline float to_f32(float v) { return v; }
__device__ inline float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ inline T from_f32(float v);
template <> __device__ inline float from_f32<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

template <class T>
__global__ void rmsnorm_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                               int64_t cols, float eps) {
  // size_t offsets: rows * cols exceeds 2^31 for long sequences times wide models
  const size_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  float sum = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = to_f32(xr[c]);
    sum += v * v;
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, off);
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.f;
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, off);
    if (lane == 0) warp_sums[0] = sum;
  }
  __syncthreads();
  const float inv = rsqrtf(warp_sums[0] / (float)cols + eps);
  // rounded to T before the weight is applied, as HF's RMSNorm does
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    yr[c] = from_f32<T>(to_f32(from_f32<T>(to_f32(xr[c]) * inv)) * to_f32(w[c]));
}

// ---------------------------------------------------------------------------------------
// launchers

template <class T>
int launch(const T* x, const T* w, T* y, int64_t rows, int64_t cols, float eps, void* stream) {
  if (rows == 0) return 0;
  const int threads = cols >= 1024 ? 1024 : (cols >= 256 ? 256 : 128);  // whole warps
  rmsnorm_kernel<T><<<(unsigned)rows, threads, 0, (cudaStream_t)stream>>>(x, w, y, cols, eps);
  return (int)cudaGetLastError();
}

}  // namespace

int launch_rmsnorm_f32(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps,
                       void* stream) {
  return launch(x, w, y, rows, cols, eps, stream);
}

int launch_rmsnorm_bf16(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t rows, int64_t cols,
                        float eps, void* stream) {
  return launch(reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<const __nv_bfloat16*>(w),
                reinterpret_cast<__nv_bfloat16*>(y), rows, cols, eps, stream);
}

}  // namespace ltrun::kernels

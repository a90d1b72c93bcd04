// runtime/kernels/rmsnorm.cpp: dispatch between the CUDA kernel and the LibTorch reference.
#include "runtime/kernels/rmsnorm.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "runtime/core/error.h"

#ifdef LTRUN_WITH_CUDA_KERNELS
#include <c10/cuda/CUDAStream.h>

#include "runtime/kernels/rmsnorm_launch.h"
#endif

namespace ltrun::kernels {

// As HF's Qwen3RMSNorm / LlamaRMSNorm: normalise in fp32 (fp64 stays fp64), round to the
// input dtype, then scale by the weight in that dtype.
at::Tensor rmsnorm_reference(const at::Tensor& x, const at::Tensor& weight, double eps) {
  const at::Tensor xf = x.to(x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  const at::Tensor inv = at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * (xf * inv).to(x.scalar_type());
}

bool rmsnorm_has_kernel() {
#ifdef LTRUN_WITH_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

at::Tensor rmsnorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  LT_CHECK(x.size(-1) == weight.numel(), "rmsnorm: last dim {} of the input != weight size {}",
           x.size(-1), weight.numel());
#ifdef LTRUN_WITH_CUDA_KERNELS
  // The kernel has no backward: autograd goes through the reference.
  const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad());
  if (x.is_cuda() && !grad && x.scalar_type() == weight.scalar_type() &&
      (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16)) {
    at::Tensor xc = x.contiguous(), wc = weight.contiguous();
    at::Tensor y = at::empty_like(xc);
    const int64_t cols = xc.size(-1), rows = xc.numel() / cols;
    void* stream = c10::cuda::getCurrentCUDAStream(x.device().index()).stream();
    int err = x.scalar_type() == at::kFloat
                  ? launch_rmsnorm_f32(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                                       rows, cols, float(eps), stream)
                  : launch_rmsnorm_bf16(reinterpret_cast<const uint16_t*>(xc.data_ptr()),
                                        reinterpret_cast<const uint16_t*>(wc.data_ptr()),
                                        reinterpret_cast<uint16_t*>(y.data_ptr()), rows, cols,
                                        float(eps), stream);
    LT_CHECK(err == 0, "rmsnorm CUDA kernel launch failed (cudaError {}) at {}:{}", err, __FILE__,
             __LINE__);
    return y;
  }
#endif
  return rmsnorm_reference(x, weight, eps);
}

}  // namespace ltrun::kernels

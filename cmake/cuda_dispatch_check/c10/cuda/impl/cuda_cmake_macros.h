// cmake/cuda_dispatch_check/c10/cuda/impl/cuda_cmake_macros.h: the one c10/cuda header that a
// CUDA LibTorch build generates and CPU LibTorch packages lack, as that build writes it for
// shared libraries. Only the compile check of the kernels' CUDA dispatch on CPU-only
// LibTorch uses it (CMakeLists.txt, scripts/check-torch2); real CUDA builds never see it.
#pragma once
#define C10_CUDA_BUILD_SHARED_LIBS

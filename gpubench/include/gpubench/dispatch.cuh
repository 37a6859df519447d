// gpubench/dispatch.cuh — instantiate a templated kernel launch per dtype code.
//
//   GB_DISPATCH(dtype, scalar_t, { my_kernel<scalar_t><<<grid, block, 0, stream>>>(...); });
//
// expands to a switch over GbDtype that binds `scalar_t` to float, __half or
// __nv_bfloat16, and returns cudaErrorInvalidValue for any other code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "dtype_code.h"

#define GB_DISPATCH(dtype, scalar_t, ...)                      \
  switch (dtype) {                                             \
    case GB_FLOAT32: {                                         \
      using scalar_t = float;                                  \
      __VA_ARGS__;                                             \
      break;                                                   \
    }                                                          \
    case GB_FLOAT16: {                                         \
      using scalar_t = __half;                                 \
      __VA_ARGS__;                                             \
      break;                                                   \
    }                                                          \
    case GB_BFLOAT16: {                                        \
      using scalar_t = __nv_bfloat16;                          \
      __VA_ARGS__;                                             \
      break;                                                   \
    }                                                          \
    default:                                                   \
      return cudaErrorInvalidValue;                            \
  }

// Arithmetic in fp32 whatever the storage type: one conversion in, one out.
// Explicit intrinsics, because torch builds with __CUDA_NO_HALF_CONVERSIONS__
// and __CUDA_NO_BFLOAT16_CONVERSIONS__, which remove the implicit ones.
__device__ __forceinline__ float gb_to_float(float v) { return v; }
__device__ __forceinline__ float gb_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float gb_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T gb_from_float(float v);
template <>
__device__ __forceinline__ float gb_from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half gb_from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 gb_from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

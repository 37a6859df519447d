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
template <typename T>
__device__ __forceinline__ float gb_to_float(T v) { return static_cast<float>(v); }
template <typename T>
__device__ __forceinline__ T gb_from_float(float v) { return static_cast<T>(v); }

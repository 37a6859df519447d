// gpubench/binding.h — helpers for the torch-facing C++ wrapper of a CUDA variant.
//
// The wrapper checks its tensors, turns the dtype into a GbDtype code, calls a
// raw-pointer launcher on torch's current stream and turns a launch error into
// a Python exception that names the kernel.
//
// Lean on purpose: the tensor type, TORCH_CHECK and the current stream — not
// torch/extension.h, whose C++ frontend (nn, optim, data, jit) and pybind11 make a
// binding take ~12-18 s to compile instead of ~1-2 s (benchmarks/build_phases.py; gpubench
// compiles the module definition apart, see gpubench/build/layout.py). A wrapper that
// allocates includes <ATen/ops/empty_like.h> (or the op it calls) itself.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include "dtype_code.h"

inline int gb_dtype_code(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return GB_FLOAT32;
    case at::kHalf: return GB_FLOAT16;
    case at::kBFloat16: return GB_BFLOAT16;
    default: TORCH_CHECK(false, "unsupported dtype ", t.scalar_type());
  }
  return -1;
}

// A contiguous CUDA tensor of the same dtype as `like`.
inline void gb_check_cuda_tensor(const at::Tensor& t, const char* name, const at::Tensor& like) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
  TORCH_CHECK(t.scalar_type() == like.scalar_type(), name, " has dtype ", t.scalar_type(),
              ", expected ", like.scalar_type());
}

inline cudaStream_t gb_current_stream() { return c10::cuda::getCurrentCUDAStream(); }

inline void gb_check_launch(cudaError_t err, const char* kernel) {
  TORCH_CHECK(err == cudaSuccess, kernel, " launch failed: ", cudaGetErrorString(err));
}

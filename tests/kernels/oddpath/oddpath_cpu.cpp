// oddpath_cpu.cpp: out = 2 * x + 1 for contiguous float32 CPU tensors.
#include <ATen/core/Tensor.h>  // the lean header: this family is about its path, not torch

#include "oddpath.h"

void twice_plus_one(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(x.is_cpu() && out.is_cpu() && x.is_contiguous() && out.is_contiguous(),
              "contiguous CPU tensors only");
  TORCH_CHECK(x.scalar_type() == at::kFloat && out.scalar_type() == at::kFloat, "float32 only");
  TORCH_CHECK(out.numel() == x.numel(), "out must match x");
  const float* src = x.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = 2.0f * src[i] + kOddpathOffset;
}

// sgemm_cpu.cpp — every step of the ladder for CPU tensors (machines without a GPU).
//
// One i-k-j triple loop, exported under each variant's name, so the whole family runs (and
// is checked) on a CPU through one extension build. It says nothing about the GPU kernels'
// speed; it keeps the family's plumbing (names, shapes, checks) exercised in CPU tests.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include "sgemm_steps.h"

#include <algorithm>
#include <vector>

static void sgemm_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                      const char* name) {
  TORCH_CHECK(a.is_cpu() && b.is_cpu() && out.is_cpu(), name, " (CPU build) takes CPU tensors");
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
                  out.scalar_type() == at::kFloat,
              name, " is fp32 only");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && out.dim() == 2, "a, b and out must be 2-D");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(), "must be contiguous");
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "a is ", a.sizes(), " and b is ", b.sizes(),
              ": a's columns must equal b's rows");
  TORCH_CHECK(out.size(0) == m && out.size(1) == n, "out is ", out.sizes(), ", expected [", m,
              ", ", n, "]");
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* pc = out.data_ptr<float>();
  std::vector<float> row(n);
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float aip = pa[i * k + p];
      const float* b_row = pb + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += aip * b_row[j];
    }
    std::copy(row.begin(), row.end(), pc + i * n);
  }
}

#define SGEMM_CPU(step)                                           \
  void sgemm_##step(at::Tensor a, at::Tensor b, at::Tensor out) { \
    sgemm_cpu(a, b, out, "sgemm_" #step);                         \
  }
SGEMM_STEPS(SGEMM_CPU)

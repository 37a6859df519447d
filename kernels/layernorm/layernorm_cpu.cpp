// layernorm_cpu.cpp — `layernorm_warp` for CPU tensors: per row, in fp32 whatever the
// storage type, as the kernels do: the mean, then the variance of x - mean (two passes,
// no E[x^2] - E[x]^2 cancellation), then (x - mean) * rstd * weight + bias.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include <cmath>

void layernorm_warp(at::Tensor x, at::Tensor weight, at::Tensor bias, double eps,
                    at::Tensor out) {
  TORCH_CHECK(x.is_cpu() && weight.is_cpu() && bias.is_cpu() && out.is_cpu(),
              "layernorm_warp (CPU build) takes CPU tensors");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1) && bias.sizes() == weight.sizes(),
              "weight and bias must be 1-D of x's cols");
  TORCH_CHECK(out.sizes() == x.sizes(), "out must match x in shape");
  for (const at::Tensor* t : {&weight, &bias, &out}) {
    TORCH_CHECK(t->scalar_type() == x.scalar_type(), "all tensors must share x's dtype");
  }
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous() &&
                  out.is_contiguous(),
              "tensors must be contiguous");
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "layernorm_cpu", [&] {
    const scalar_t* src = x.data_ptr<scalar_t>();
    const scalar_t* w = weight.data_ptr<scalar_t>();
    const scalar_t* b = bias.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* xr = src + r * cols;
      scalar_t* yr = dst + r * cols;
      float sum = 0.0f;
      for (int64_t j = 0; j < cols; ++j) sum += static_cast<float>(xr[j]);
      const float mean = sum / cols;
      float sq = 0.0f;
      for (int64_t j = 0; j < cols; ++j) {
        const float d = static_cast<float>(xr[j]) - mean;
        sq += d * d;
      }
      const float rstd = 1.0f / std::sqrt(sq / cols + static_cast<float>(eps));
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = static_cast<scalar_t>((static_cast<float>(xr[j]) - mean) * rstd *
                                          static_cast<float>(w[j]) +
                                      static_cast<float>(b[j]));
      }
    }
  });
}

// bias_gelu_cpu.cpp — the CUDA variants' functions for CPU tensors, in fp32 whatever the
// storage type, with the kernels' formula gelu(z) = z / (1 + exp(-2u)),
// u = sqrt(2 / pi) * (z + 0.044715 z^3) (the tanh GELU):
//   bias_gelu_unfused  two passes: out = x + bias (rounded to the storage type, as the GPU's
//                      intermediate is), then out = gelu(out) in place;
//   bias_gelu_fused    one pass: out = gelu(x + bias).
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include <cmath>

static float gelu(float z) {
  const float a = 1.5957691216057308f;  // 2 sqrt(2 / pi)
  return z / (1.0f + std::exp(-a * (z + 0.044715f * z * z * z)));
}

template <bool kFused>
static void bias_gelu(const at::Tensor& x, const at::Tensor& bias, at::Tensor& out) {
  TORCH_CHECK(x.is_cpu() && bias.is_cpu() && out.is_cpu(),
              "bias_gelu (CPU build) takes CPU tensors");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(1), "bias must be 1-D of x's cols");
  TORCH_CHECK(out.sizes() == x.sizes(), "out must match x in shape");
  TORCH_CHECK(bias.scalar_type() == x.scalar_type() && out.scalar_type() == x.scalar_type(),
              "x, bias and out must share a dtype");
  TORCH_CHECK(x.is_contiguous() && bias.is_contiguous() && out.is_contiguous(),
              "tensors must be contiguous");
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "bias_gelu_cpu", [&] {
    const scalar_t* src = x.data_ptr<scalar_t>();
    const scalar_t* b = bias.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) {
        const float z = static_cast<float>(src[r * cols + j]) + static_cast<float>(b[j]);
        dst[r * cols + j] = static_cast<scalar_t>(kFused ? gelu(z) : z);
      }
    }
    if (!kFused) {
      for (int64_t i = 0; i < rows * cols; ++i) {
        dst[i] = static_cast<scalar_t>(gelu(static_cast<float>(dst[i])));
      }
    }
  });
}

void bias_gelu_unfused(at::Tensor x, at::Tensor bias, at::Tensor out) {
  bias_gelu<false>(x, bias, out);
}

void bias_gelu_fused(at::Tensor x, at::Tensor bias, at::Tensor out) {
  bias_gelu<true>(x, bias, out);
}

// softmax_cpu.cpp — `softmax_naive` for CPU tensors: the same three passes per row
// as softmax.cu (max, sum of exp(x - max), write exp(x - max) / sum), in fp32.
#include <torch/extension.h>

#include <cmath>
#include <limits>

void softmax_naive(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(x.is_cpu() && out.is_cpu(), "softmax_naive (CPU build) takes CPU tensors");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type(),
              "out must match x in shape and dtype");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "softmax_naive", [&] {
    const scalar_t* src = x.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* xr = src + r * cols;
      scalar_t* yr = dst + r * cols;
      float row_max = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < cols; ++j) row_max = std::fmax(row_max, static_cast<float>(xr[j]));
      float sum = 0.0f;
      for (int64_t j = 0; j < cols; ++j) sum += std::exp(static_cast<float>(xr[j]) - row_max);
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = static_cast<scalar_t>(std::exp(static_cast<float>(xr[j]) - row_max) / sum);
      }
    }
  });
}

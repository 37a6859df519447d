// matmul_cpu.cpp — `matmul_naive` for CPU tensors: the textbook triple loop,
// i-k-j order so the inner loop walks B and C rows contiguously. fp32 accumulation.
#include <torch/extension.h>

#include <vector>

void matmul_naive(at::Tensor a, at::Tensor b, at::Tensor out) {
  TORCH_CHECK(a.is_cpu() && b.is_cpu() && out.is_cpu(), "matmul_naive (CPU build) takes CPU tensors");
  TORCH_CHECK(a.dim() == 2 && a.size(0) == a.size(1), "a must be square");
  TORCH_CHECK(b.sizes() == a.sizes() && out.sizes() == a.sizes(), "a, b and out differ in shape");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(), "must be contiguous");
  const int64_t n = a.size(0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "matmul_naive", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    scalar_t* pc = out.data_ptr<scalar_t>();
    std::vector<float> row(n);
    for (int64_t i = 0; i < n; ++i) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (int64_t k = 0; k < n; ++k) {
        const float aik = static_cast<float>(pa[i * n + k]);
        for (int64_t j = 0; j < n; ++j) row[j] += aik * static_cast<float>(pb[k * n + j]);
      }
      for (int64_t j = 0; j < n; ++j) pc[i * n + j] = static_cast<scalar_t>(row[j]);
    }
  });
}

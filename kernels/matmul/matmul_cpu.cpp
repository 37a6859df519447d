// matmul_cpu.cpp — `matmul_naive` for CPU tensors: out[M,N] = a[M,K] @ b[K,N] by the
// textbook triple loop, i-k-j order so the inner loop walks B and C rows contiguously.
// fp32 accumulation whatever the storage type, as on the GPU.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

void matmul_naive(at::Tensor a, at::Tensor b, at::Tensor out) {
  TORCH_CHECK(a.is_cpu() && b.is_cpu() && out.is_cpu(),
              "matmul_naive (CPU build) takes CPU tensors");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && out.dim() == 2, "a, b and out must be 2-D");
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "a is ", a.sizes(), " and b is ", b.sizes(),
              ": a's columns must equal b's rows");
  TORCH_CHECK(out.size(0) == m && out.size(1) == n, "out is ", out.sizes(), ", expected [", m,
              ", ", n, "]");
  TORCH_CHECK(b.scalar_type() == a.scalar_type() && out.scalar_type() == a.scalar_type(),
              "a, b and out must share a dtype");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(), "must be contiguous");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "matmul_naive", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    scalar_t* pc = out.data_ptr<scalar_t>();
    std::vector<float> row(n);  // one fp32 row of C, rounded to scalar_t once at the end
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float aip = static_cast<float>(pa[i * k + p]);
        const scalar_t* b_row = pb + p * n;
        for (int64_t j = 0; j < n; ++j) row[j] += aip * static_cast<float>(b_row[j]);
      }
      for (int64_t j = 0; j < n; ++j) pc[i * n + j] = static_cast<scalar_t>(row[j]);
    }
  });
}

// matmul_binding.cpp — torch-facing wrappers of matmul.cu: matmul_naive, matmul_tiled and
// matmul_wmma (fp16/bf16 only: its launcher refuses fp32 with "invalid argument").
#include <gpubench/binding.h>

#include <limits>

cudaError_t matmul_naive_launch(const void* a, const void* b, void* c, int m, int n, int k,
                                int dtype, cudaStream_t stream);
cudaError_t matmul_tiled_launch(const void* a, const void* b, void* c, int m, int n, int k,
                                int dtype, cudaStream_t stream);
cudaError_t matmul_wmma_launch(const void* a, const void* b, void* c, int m, int n, int k,
                               int dtype, cudaStream_t stream);

using Launcher = cudaError_t (*)(const void*, const void*, void*, int, int, int, int,
                                 cudaStream_t);

// out[M,N] = a[M,K] @ b[K,N]; the kernels index rows and columns with int.
static void run_matmul(Launcher launch, const char* kernel, at::Tensor a, at::Tensor b,
                       at::Tensor out) {
  gb_check_cuda_tensor(a, "a", a);
  gb_check_cuda_tensor(b, "b", a);
  gb_check_cuda_tensor(out, "out", a);
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && out.dim() == 2,
              "a, b and out must be 2-D, got ", a.sizes(), ", ", b.sizes(), " and ", out.sizes());
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  TORCH_CHECK(b.size(0) == k, "a is ", a.sizes(), " and b is ", b.sizes(),
              ": a's columns must equal b's rows");
  TORCH_CHECK(out.size(0) == m && out.size(1) == n, "out is ", out.sizes(), ", expected [", m,
              ", ", n, "]");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TORCH_CHECK(m <= kIntMax && n <= kIntMax && k <= kIntMax, "M, N and K must fit in an int, got ",
              m, ", ", n, ", ", k);
  gb_check_launch(launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), static_cast<int>(m),
                         static_cast<int>(n), static_cast<int>(k), gb_dtype_code(a),
                         gb_current_stream()),
                  kernel);
}

void matmul_naive(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_matmul(matmul_naive_launch, "matmul_naive_kernel", a, b, out);
}

void matmul_tiled(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_matmul(matmul_tiled_launch, "matmul_tiled_kernel", a, b, out);
}

void matmul_wmma(at::Tensor a, at::Tensor b, at::Tensor out) {
  TORCH_CHECK(a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16,
              "matmul_wmma takes float16 or bfloat16, got ", a.scalar_type());
  run_matmul(matmul_wmma_launch, "matmul_wmma_kernel", a, b, out);
}

// matmul_binding.cpp — torch-facing wrappers of matmul.cu: matmul_naive and matmul_tiled.
#include <gpubench/binding.h>

cudaError_t matmul_naive_launch(const void* a, const void* b, void* c, int n, int dtype,
                                cudaStream_t stream);
cudaError_t matmul_tiled_launch(const void* a, const void* b, void* c, int n, int dtype,
                                cudaStream_t stream);

using Launcher = cudaError_t (*)(const void*, const void*, void*, int, int, cudaStream_t);

static void run_square_matmul(Launcher launch, const char* kernel, at::Tensor a, at::Tensor b,
                              at::Tensor out) {
  gb_check_cuda_tensor(a, "a", a);
  gb_check_cuda_tensor(b, "b", a);
  gb_check_cuda_tensor(out, "out", a);
  TORCH_CHECK(a.dim() == 2 && a.size(0) == a.size(1), "a must be square, got ", a.sizes());
  TORCH_CHECK(b.sizes() == a.sizes() && out.sizes() == a.sizes(), "a, b and out differ in shape");
  TORCH_CHECK(a.size(0) < (1LL << 31), "N must fit in an int");
  gb_check_launch(launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), static_cast<int>(a.size(0)),
                         gb_dtype_code(a), gb_current_stream()),
                  kernel);
}

void matmul_naive(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_square_matmul(matmul_naive_launch, "matmul_naive_kernel", a, b, out);
}

void matmul_tiled(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_square_matmul(matmul_tiled_launch, "matmul_tiled_kernel", a, b, out);
}

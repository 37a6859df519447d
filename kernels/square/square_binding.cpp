// square_binding.cpp — torch-facing wrapper of square.cu (destination-passing).
#include <gpubench/binding.h>

cudaError_t square_launch(const void* x, void* y, int64_t n, int dtype, cudaStream_t stream);

void square(at::Tensor x, at::Tensor out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(out.numel() == x.numel(), "out has ", out.numel(), " elements, x has ", x.numel());
  gb_check_launch(square_launch(x.data_ptr(), out.data_ptr(), x.numel(), gb_dtype_code(x),
                                gb_current_stream()),
                  "square_kernel");
}

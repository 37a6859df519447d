// softmax_binding.cpp — torch-facing wrapper of softmax.cu (destination-passing).
#include <gpubench/binding.h>

cudaError_t softmax_naive_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                 cudaStream_t stream);

// out[r, :] = softmax(x[r, :]) for a 2-D rows x cols x.
void softmax_naive(at::Tensor x, at::Tensor out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(out.sizes() == x.sizes(), "out is ", out.sizes(), ", x is ", x.sizes());
  gb_check_launch(softmax_naive_launch(x.data_ptr(), out.data_ptr(), x.size(0), x.size(1),
                                       gb_dtype_code(x), gb_current_stream()),
                  "softmax_naive_kernel");
}

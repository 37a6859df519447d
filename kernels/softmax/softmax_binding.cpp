// softmax_binding.cpp — torch-facing wrappers of softmax.cu (destination-passing):
// softmax_naive, softmax_online and softmax_block_reduce, one extension for all three.
#include <gpubench/binding.h>

cudaError_t softmax_naive_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                 cudaStream_t stream);
cudaError_t softmax_online_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                  cudaStream_t stream);
cudaError_t softmax_block_reduce_launch(const void* x, void* y, int64_t rows, int64_t cols,
                                        int dtype, cudaStream_t stream);

using Launcher = cudaError_t (*)(const void*, void*, int64_t, int64_t, int, cudaStream_t);

// out[r, :] = softmax(x[r, :]) for a 2-D rows x cols x.
static void run_softmax(Launcher launch, const char* kernel, at::Tensor x, at::Tensor out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(out.sizes() == x.sizes(), "out is ", out.sizes(), ", x is ", x.sizes());
  gb_check_launch(launch(x.data_ptr(), out.data_ptr(), x.size(0), x.size(1), gb_dtype_code(x),
                         gb_current_stream()),
                  kernel);
}

void softmax_naive(at::Tensor x, at::Tensor out) {
  run_softmax(softmax_naive_launch, "softmax_naive_kernel", x, out);
}

void softmax_online(at::Tensor x, at::Tensor out) {
  run_softmax(softmax_online_launch, "softmax_online_kernel", x, out);
}

void softmax_block_reduce(at::Tensor x, at::Tensor out) {
  run_softmax(softmax_block_reduce_launch, "softmax_block_kernel", x, out);
}

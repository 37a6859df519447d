// bias_gelu_binding.cpp — torch-facing wrappers of bias_gelu.cu (destination-passing):
// bias_gelu_unfused (two kernels) and bias_gelu_fused (one), one extension for both.
#include <gpubench/binding.h>

cudaError_t bias_gelu_unfused_launch(const void* x, const void* bias, void* y, int64_t rows,
                                     int64_t cols, int dtype, cudaStream_t stream);
cudaError_t bias_gelu_fused_launch(const void* x, const void* bias, void* y, int64_t rows,
                                   int64_t cols, int dtype, cudaStream_t stream);

using Launcher = cudaError_t (*)(const void*, const void*, void*, int64_t, int64_t, int,
                                 cudaStream_t);

// out = gelu_tanh(x + bias) for a 2-D rows x cols x and a 1-D bias of cols elements.
static void run_bias_gelu(Launcher launch, const char* kernel, at::Tensor x, at::Tensor bias,
                          at::Tensor out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(bias, "bias", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(1), "bias must be 1-D of x's cols, got ",
              bias.sizes());
  TORCH_CHECK(out.sizes() == x.sizes(), "out is ", out.sizes(), ", x is ", x.sizes());
  gb_check_launch(launch(x.data_ptr(), bias.data_ptr(), out.data_ptr(), x.size(0), x.size(1),
                         gb_dtype_code(x), gb_current_stream()),
                  kernel);
}

void bias_gelu_unfused(at::Tensor x, at::Tensor bias, at::Tensor out) {
  run_bias_gelu(bias_gelu_unfused_launch, "bias_rows_kernel + gelu_inplace_kernel", x, bias, out);
}

void bias_gelu_fused(at::Tensor x, at::Tensor bias, at::Tensor out) {
  run_bias_gelu(bias_gelu_fused_launch, "bias_rows_kernel<gelu>", x, bias, out);
}

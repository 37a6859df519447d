// layernorm_binding.cpp — torch-facing wrapper of layernorm.cu (destination-passing).
#include <gpubench/binding.h>

cudaError_t layernorm_warp_launch(const void* x, const void* w, const void* b, void* y,
                                  int64_t rows, int64_t cols, double eps, int dtype,
                                  cudaStream_t stream);

// out = layer_norm(x, (cols,), weight, bias, eps) for a 2-D rows x cols x.
void layernorm_warp(at::Tensor x, at::Tensor weight, at::Tensor bias, double eps,
                    at::Tensor out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(weight, "weight", x);
  gb_check_cuda_tensor(bias, "bias", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(1) && bias.sizes() == weight.sizes(),
              "weight and bias must be 1-D of x's cols, got ", weight.sizes(), " and ",
              bias.sizes());
  TORCH_CHECK(out.sizes() == x.sizes(), "out is ", out.sizes(), ", x is ", x.sizes());
  gb_check_launch(layernorm_warp_launch(x.data_ptr(), weight.data_ptr(), bias.data_ptr(),
                                        out.data_ptr(), x.size(0), x.size(1), eps,
                                        gb_dtype_code(x), gb_current_stream()),
                  "layernorm kernel");
}

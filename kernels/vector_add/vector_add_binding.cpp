// vector_add_binding.cpp — torch-facing wrapper of vector_add.cu (destination-passing).
#include <gpubench/binding.h>

cudaError_t vector_add_launch(const void* a, const void* b, void* out, int64_t n, int dtype,
                              cudaStream_t stream);

void vector_add(at::Tensor a, at::Tensor b, at::Tensor out) {
  gb_check_cuda_tensor(a, "a", a);
  gb_check_cuda_tensor(b, "b", a);
  gb_check_cuda_tensor(out, "out", a);
  TORCH_CHECK(a.numel() == b.numel() && a.numel() == out.numel(), "a, b and out differ in size");
  gb_check_launch(vector_add_launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(),
                                    gb_dtype_code(a), gb_current_stream()),
                  "vector_add_kernel");
}

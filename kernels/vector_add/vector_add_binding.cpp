// vector_add_binding.cpp — torch-facing wrappers of vector_add.cu (destination-passing):
// vector_add (one element per thread) and vector_add_vectorized (16 bytes per thread).
#include <gpubench/binding.h>

cudaError_t vector_add_launch(const void* a, const void* b, void* out, int64_t n, int dtype,
                              cudaStream_t stream);
cudaError_t vector_add_vectorized_launch(const void* a, const void* b, void* out, int64_t n,
                                         int dtype, cudaStream_t stream);

using Launcher = cudaError_t (*)(const void*, const void*, void*, int64_t, int, cudaStream_t);

static void run_vector_add(Launcher launch, const char* kernel, const at::Tensor& a,
                           const at::Tensor& b, const at::Tensor& out) {
  gb_check_cuda_tensor(a, "a", a);
  gb_check_cuda_tensor(b, "b", a);
  gb_check_cuda_tensor(out, "out", a);
  TORCH_CHECK(a.numel() == b.numel() && a.numel() == out.numel(), "a, b and out differ in size");
  gb_check_launch(launch(a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel(), gb_dtype_code(a),
                         gb_current_stream()),
                  kernel);
}

void vector_add(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_vector_add(vector_add_launch, "vector_add_kernel", a, b, out);
}

void vector_add_vectorized(at::Tensor a, at::Tensor b, at::Tensor out) {
  run_vector_add(vector_add_vectorized_launch, "vector_add_vec_kernel", a, b, out);
}

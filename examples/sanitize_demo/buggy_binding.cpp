// buggy_binding.cpp — torch-facing wrappers of buggy.cu (destination-passing).
#include <ATen/ops/empty_like.h>
#include <gpubench/binding.h>

cudaError_t oob_launch(const float* x, float* y, int64_t n, cudaStream_t s);
cudaError_t race_launch(const float* x, float* y, int64_t n, cudaStream_t s);
cudaError_t uninit_launch(const float* x, const float* scratch, float* y, int64_t n,
                          cudaStream_t s);
cudaError_t clean_launch(const float* x, float* y, int64_t n, cudaStream_t s);

static void check(const at::Tensor& x, const at::Tensor& out) {
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(out, "out", x);
  TORCH_CHECK(x.scalar_type() == at::kFloat, "float32 only");
}

void oob(at::Tensor x, at::Tensor out) {
  check(x, out);
  gb_check_launch(oob_launch(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
                             gb_current_stream()), "oob_kernel");
}

void race(at::Tensor x, at::Tensor out) {
  check(x, out);
  gb_check_launch(race_launch(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
                              gb_current_stream()), "race_kernel");
}

void uninit(at::Tensor x, at::Tensor out) {
  check(x, out);
  at::Tensor scratch = at::empty_like(x);  // allocated, never written
  gb_check_launch(uninit_launch(x.data_ptr<float>(), scratch.data_ptr<float>(),
                                out.data_ptr<float>(), x.numel(), gb_current_stream()),
                  "uninit_kernel");
}

void clean(at::Tensor x, at::Tensor out) {
  check(x, out);
  gb_check_launch(clean_launch(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
                               gb_current_stream()), "clean_kernel");
}

// sgemm_binding.cpp — torch-facing wrappers of sgemm.cu, one per step of the ladder.
//
// Every wrapper takes fp32 a[M,K], b[K,N] and writes out[M,N] (destination-passing), on
// torch's current stream; a launch error becomes a Python exception naming the kernel.
#include <gpubench/binding.h>

#include "sgemm_steps.h"

#include <limits>

using Launcher = cudaError_t (*)(const float*, const float*, float*, int, int, int,
                                 cudaStream_t);

#define SGEMM_DECLARE_LAUNCH(step) \
  cudaError_t sgemm_##step##_launch(const float*, const float*, float*, int, int, int, \
                                    cudaStream_t);
SGEMM_STEPS(SGEMM_DECLARE_LAUNCH)

static void run_sgemm(Launcher launch, const char* kernel, const at::Tensor& a,
                      const at::Tensor& b, const at::Tensor& out) {
  gb_check_cuda_tensor(a, "a", a);
  gb_check_cuda_tensor(b, "b", a);
  gb_check_cuda_tensor(out, "out", a);
  TORCH_CHECK(a.scalar_type() == at::kFloat, kernel, " is fp32 only, got ", a.scalar_type());
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
  gb_check_launch(launch(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(),
                         static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                         gb_current_stream()),
                  kernel);
}

#define SGEMM_WRAP(step)                                                   \
  void sgemm_##step(at::Tensor a, at::Tensor b, at::Tensor out) {          \
    run_sgemm(sgemm_##step##_launch, "sgemm_" #step "_kernel", a, b, out); \
  }
SGEMM_STEPS(SGEMM_WRAP)

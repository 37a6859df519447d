// buggy.cu — y = 2 * x, four ways; three of them hide a bug for `gpubench sanitize`.
#include <cstdint>

constexpr int kThreads = 256;  // one element per thread, 8 warps per block

__global__ void oob_kernel(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= n)  // BUG: <= writes y[n], one past the end
    y[i] = 2.0f * x[i < n ? i : 0];
}

__global__ void race_kernel(const float* x, float* y, int64_t n) {
  __shared__ float tile[kThreads];
  int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x;
  int t = threadIdx.x;
  tile[t] = base + t < n ? x[base + t] : 0.0f;
  // BUG: no __syncthreads() here; the slot read below belongs to another warp
  int other = t ^ 32;
  if (base + other < n) y[base + other] = 2.0f * tile[other];
}

__global__ void uninit_kernel(const float* x, const float* scratch, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    float junk = scratch[i];  // BUG: nothing ever wrote scratch
    y[i] = 2.0f * x[i] + (junk == 1234.5f ? 1.0f : 0.0f);
  }
}

__global__ void clean_kernel(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

static int blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

cudaError_t oob_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
  oob_kernel<<<blocks(n + 1), kThreads, 0, s>>>(x, y, n);
  return cudaGetLastError();
}
cudaError_t race_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
  race_kernel<<<blocks(n), kThreads, 0, s>>>(x, y, n);
  return cudaGetLastError();
}
cudaError_t uninit_launch(const float* x, const float* scratch, float* y, int64_t n,
                          cudaStream_t s) {
  uninit_kernel<<<blocks(n), kThreads, 0, s>>>(x, scratch, y, n);
  return cudaGetLastError();
}
cudaError_t clean_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
  clean_kernel<<<blocks(n), kThreads, 0, s>>>(x, y, n);
  return cudaGetLastError();
}

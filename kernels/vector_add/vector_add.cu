// vector_add.cu — out[i] = a[i] + b[i].
//
// Napkin math per element: 1 FLOP, two reads and one write of sizeof(T) bytes,
// 3 * n * sizeof(T) in all: 1/12 FLOP/byte in fp32, memory-bound on any GPU.
#include <cstdint>

#include <gpubench/dispatch.cuh>

template <typename T>
__global__ void vector_add_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                  T* __restrict__ out, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = gb_from_float<T>(gb_to_float(a[i]) + gb_to_float(b[i]));
  }
}

cudaError_t vector_add_launch(const void* a, const void* b, void* out, int64_t n, int dtype,
                              cudaStream_t stream) {
  constexpr int kThreads = 256;  // 8 warps per block, one element per thread
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (n == 0) return cudaSuccess;
  GB_DISPATCH(dtype, scalar_t, {
    vector_add_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(out), n);
  });
  return cudaGetLastError();
}

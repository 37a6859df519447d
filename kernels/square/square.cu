// square.cu — the classic first CUDA kernel: y[i] = x[i] * x[i].
//
// Napkin math per element: 1 FLOP, one read and one write of sizeof(T) bytes.
// At 0.125 FLOP/byte (fp32) it is purely memory-bound: the best it can do is
// move 2 * n * sizeof(T) bytes at the card's copy bandwidth.
#include <cstdint>

#include <gpubench/dispatch.cuh>

#ifndef SQUARE_THREADS
#define SQUARE_THREADS 256
#endif

template <typename T>
__global__ void square_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = gb_to_float(x[i]);
    y[i] = gb_from_float<T>(v * v);
  }
}

cudaError_t square_launch(const void* x, void* y, int64_t n, int dtype, cudaStream_t stream) {
  // 256 threads = 8 warps per block: the textbook choice; with one element per
  // thread, 16M elements give 65536 blocks, hundreds per SM, plenty in flight.
  // SQUARE_THREADS: the block size `gpubench tune square --variant cuda` races (spec.py).
  constexpr int kThreads = SQUARE_THREADS;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (n == 0) return cudaSuccess;
  GB_DISPATCH(dtype, scalar_t, {
    square_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y), n);
  });
  return cudaGetLastError();
}

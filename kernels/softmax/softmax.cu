// softmax.cu — y[r, :] = softmax(x[r, :]) over the last axis of a rows x cols
// row-major matrix: the naive three-pass kernel, one thread per row.
//
// Napkin math per element: ~5 FLOPs (max-compare, subtract, exp, add, divide;
// exp counted as one), and at least one read and one write of sizeof(T) bytes:
// 0.625 FLOP/byte in fp32, memory-bound. The best a kernel can do is move
// 2 * rows * cols * sizeof(T) bytes at the card's copy bandwidth.
//
// Why this kernel is slow:
//   uncoalesced: thread t walks row t, so at each step the 32 threads of a warp
//     read addresses cols * sizeof(T) apart: 32 separate 32-byte sectors per
//     load instruction where a coalesced fp32 load touches 4. L1 may keep a
//     sector for the thread's next few elements, but every step still costs
//     32 memory transactions per warp instead of one;
//   too few threads: only `rows` of them; 4096 rows are 16 blocks of 256 on a
//     132-SM H100, so most SMs sit idle and the few warps cannot hide latency;
//   three passes: the row is read three times (max, sum, write), from L1/L2
//     when it is lucky, from DRAM when not.
// Arithmetic is in fp32 whatever the storage type.
#include <cmath>
#include <cstdint>

#include <gpubench/dispatch.cuh>

template <typename T>
__global__ void softmax_naive_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                     int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  // Pass 1: the row max, subtracted before exp so that exp never overflows.
  float row_max = -INFINITY;
  for (int64_t j = 0; j < cols; ++j) row_max = fmaxf(row_max, gb_to_float(xr[j]));
  // Pass 2: the denominator.
  float sum = 0.0f;
  for (int64_t j = 0; j < cols; ++j) sum += expf(gb_to_float(xr[j]) - row_max);
  // Pass 3: exp again (recomputing is cheaper than storing it) and normalise.
  for (int64_t j = 0; j < cols; ++j) {
    yr[j] = gb_from_float<T>(expf(gb_to_float(xr[j]) - row_max) / sum);
  }
}

cudaError_t softmax_naive_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                 cudaStream_t stream) {
  // 256 threads = 8 warps per block, the textbook choice; one row per thread.
  constexpr int kThreads = 256;
  if (rows == 0 || cols == 0) return cudaSuccess;  // an empty grid is a launch error
  const int64_t blocks = (rows + kThreads - 1) / kThreads;
  GB_DISPATCH(dtype, scalar_t, {
    softmax_naive_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y), rows, cols);
  });
  return cudaGetLastError();
}

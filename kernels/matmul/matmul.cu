// matmul.cu — C[M,N] = A[M,K] @ B[K,N], row-major contiguous, two classic kernels.
//
// Napkin math: 2 * M * N * K FLOPs (a multiply and an add per term); the fewest
// bytes are (M*K + K*N + M*N) * sizeof(T) (read A and B once, write C once). At
// 4096^3 in fp32 that is 137 GFLOP over 201 MB: 683 FLOP/byte, far above the
// ridge point, so a good kernel is compute-bound. These two are not good
// kernels; they show why:
//   naive: each thread reads a row of A and a column of B from global memory,
//          2 * K loads per output, 2 * M * N * K loads in all (L1/L2 absorb some);
//   tiled: 32 x 32 tiles staged in shared memory, each element of A loaded
//          N / 32 times and each of B M / 32 times instead of N and M times:
//          32x fewer global loads.
// Both accumulate in fp32 whatever the storage type, and both handle ragged
// edges (M, N, K not multiples of the block) by bounds checks.
//
// Grid: x walks columns (limit 2^31 - 1 blocks), y walks rows (limit 65535
// blocks), so M is capped at 65535 * 16 rows (naive) and 65535 * 32 (tiled);
// beyond that the launch fails with "invalid configuration argument".
#include <cstdint>

#include <gpubench/dispatch.cuh>

template <typename T>
__global__ void matmul_naive_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                    T* __restrict__ c, int m, int n, int k) {
  // x indexes columns so that a warp's loads of B and stores of C are coalesced:
  // a warp spans 16 columns of 2 rows, two contiguous runs; A's loads are two broadcasts.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  const T* a_row = a + static_cast<int64_t>(row) * k;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) {
    acc += gb_to_float(a_row[i]) * gb_to_float(b[static_cast<int64_t>(i) * n + col]);
  }
  c[static_cast<int64_t>(row) * n + col] = gb_from_float<T>(acc);
}

// 32 x 32 = 1024 threads, one output each; two fp32 tiles = 8 KiB of shared memory.
constexpr int kTile = 32;

template <typename T>
__global__ void matmul_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                    T* __restrict__ c, int m, int n, int k) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kTile + tx;
  const int row = blockIdx.y * kTile + ty;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    // Out-of-range elements load as 0 so ragged edges (in M, N or K) add nothing.
    // Threads outside C still load and sync: every thread must reach __syncthreads.
    a_tile[ty][tx] = (row < m && t + tx < k)
                         ? gb_to_float(a[static_cast<int64_t>(row) * k + t + tx]) : 0.0f;
    b_tile[ty][tx] = (t + ty < k && col < n)
                         ? gb_to_float(b[static_cast<int64_t>(t + ty) * n + col]) : 0.0f;
    __syncthreads();
    // a_tile[ty][i] is a broadcast within the warp; b_tile[i][tx] hits 32 banks.
#pragma unroll
    for (int i = 0; i < kTile; ++i) acc += a_tile[ty][i] * b_tile[i][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<int64_t>(row) * n + col] = gb_from_float<T>(acc);
}

cudaError_t matmul_naive_launch(const void* a, const void* b, void* c, int m, int n, int k,
                                int dtype, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;  // an empty grid is a launch error
  // 16 x 16 threads: the SGEMM-tutorial block, 256 threads, 8 warps.
  const dim3 block(16, 16);
  // (x - 1) / b + 1 rounds up without overflowing int near 2^31 (x >= 1 here).
  const dim3 grid((n - 1) / 16 + 1, (m - 1) / 16 + 1);
  GB_DISPATCH(dtype, scalar_t, {
    matmul_naive_kernel<scalar_t><<<grid, block, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(c), m, n, k);
  });
  return cudaGetLastError();
}

cudaError_t matmul_tiled_launch(const void* a, const void* b, void* c, int m, int n, int k,
                                int dtype, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;  // an empty grid is a launch error
  const dim3 block(kTile, kTile);
  const dim3 grid((n - 1) / kTile + 1, (m - 1) / kTile + 1);
  GB_DISPATCH(dtype, scalar_t, {
    matmul_tiled_kernel<scalar_t><<<grid, block, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(c), m, n, k);
  });
  return cudaGetLastError();
}

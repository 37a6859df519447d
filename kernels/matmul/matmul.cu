// matmul.cu — C = A @ B for square N x N row-major matrices, two classic kernels.
//
// Napkin math: 2 * N^3 FLOPs (a multiply and an add per term); the fewest bytes
// are 3 * N^2 * sizeof(T) (read A and B once, write C once). At N = 4096 in fp32
// that is 137 GFLOP over 201 MB: 683 FLOP/byte, far above the ridge point, so a
// good kernel is compute-bound. These two are not good kernels; they show why:
//   naive: each thread reads a row of A and a column of B from global memory,
//          2 * N loads per output, 2 * N^3 loads in all (L1/L2 absorb some);
//   tiled: 32 x 32 tiles staged in shared memory, each global element loaded
//          N / 32 times instead of N times: 32x fewer global loads.
// Both accumulate in fp32 whatever the storage type.
#include <cstdint>

#include <gpubench/dispatch.cuh>

template <typename T>
__global__ void matmul_naive_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                    T* __restrict__ c, int n) {
  // x indexes columns so that a warp's loads of B and stores of C are coalesced.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= n || col >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) {
    acc += gb_to_float(a[static_cast<int64_t>(row) * n + k]) *
           gb_to_float(b[static_cast<int64_t>(k) * n + col]);
  }
  c[static_cast<int64_t>(row) * n + col] = gb_from_float<T>(acc);
}

// 32 x 32 = 1024 threads, one output each; two fp32 tiles = 8 KiB of shared memory.
constexpr int kTile = 32;

template <typename T>
__global__ void matmul_tiled_kernel(const T* __restrict__ a, const T* __restrict__ b,
                                    T* __restrict__ c, int n) {
  __shared__ float a_tile[kTile][kTile];
  __shared__ float b_tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kTile + tx;
  const int row = blockIdx.y * kTile + ty;
  float acc = 0.0f;
  for (int t = 0; t < n; t += kTile) {
    // Out-of-range elements load as 0 so ragged edges add nothing.
    a_tile[ty][tx] = (row < n && t + tx < n)
                         ? gb_to_float(a[static_cast<int64_t>(row) * n + t + tx]) : 0.0f;
    b_tile[ty][tx] = (t + ty < n && col < n)
                         ? gb_to_float(b[static_cast<int64_t>(t + ty) * n + col]) : 0.0f;
    __syncthreads();
    // a_tile[ty][k] is a broadcast within the warp; b_tile[k][tx] hits 32 banks.
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc += a_tile[ty][k] * b_tile[k][tx];
    __syncthreads();
  }
  if (row < n && col < n) c[static_cast<int64_t>(row) * n + col] = gb_from_float<T>(acc);
}

cudaError_t matmul_naive_launch(const void* a, const void* b, void* c, int n, int dtype,
                                cudaStream_t stream) {
  // 16 x 16 threads: the SGEMM-tutorial block, 256 threads, 8 warps.
  const dim3 block(16, 16);
  const dim3 grid((n + 15) / 16, (n + 15) / 16);
  GB_DISPATCH(dtype, scalar_t, {
    matmul_naive_kernel<scalar_t><<<grid, block, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(c), n);
  });
  return cudaGetLastError();
}

cudaError_t matmul_tiled_launch(const void* a, const void* b, void* c, int n, int dtype,
                                cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (n + kTile - 1) / kTile);
  GB_DISPATCH(dtype, scalar_t, {
    matmul_tiled_kernel<scalar_t><<<grid, block, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(c), n);
  });
  return cudaGetLastError();
}

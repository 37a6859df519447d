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
//   wmma:  the first tensor-core step (fp16/bf16 only), see matmul_wmma_kernel below.
//
// Grid: x walks columns (limit 2^31 - 1 blocks), y walks rows (limit 65535
// blocks), so M is capped at 65535 * 16 rows (naive) and 65535 * 32 (tiled);
// beyond that the launch fails with "invalid configuration argument".
#include <cstdint>

#include <mma.h>

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

// ----------------------------------------------------------------------------------------
// wmma: tensor cores through nvcuda::wmma, 16 x 16 x 16 fp16/bf16 tiles, fp32 accumulate.
//
// The first tensor-core step, kept simple: a 128 x 128 block tile, K in steps of 32, 256
// threads = 8 warps in a 4 x 2 grid, each warp owning a 32 x 64 piece of C as 2 x 4
// accumulator fragments (16 x 16 fp32 each, 64 registers a thread). Per K step the block
// stages A's 128 x 32 and B's 32 x 128 tiles in shared memory (16-byte loads, rows padded
// by 8 elements against ldmatrix bank conflicts), and each warp does 2 x (2 + 4) fragment
// loads and 16 mma_sync. The accumulators go out through a 16 x 16 fp32 scratch per warp,
// rounded to the storage type once.
//
// Napkin math at 4096^3 bf16 on an H200: 137 GFLOP; the dense bf16 tensor-core peak is
// ~990 TFLOP/s through wgmma (Hopper's warpgroup MMA), cuBLAS reaches ~600-750. wmma
// compiles to the older mma.sync, which tops out near 60% of that peak, and this kernel
// does not overlap its global loads with the MMAs (load, sync, compute, sync) and reuses
// each staged element only 128 times: expect ~100-250 TFLOP/s, 15-35% of cuBLAS, yet
// ~20-40x the fp32 SIMT kernels above. Next steps (not here): cp.async multi-stage
// pipelines, larger warp tiles, then wgmma + TMA.
//
// Needs sm_80+ (bf16 fragments): on an older GPU the launcher returns "operation not
// supported" and the kernel body is compiled empty. Ragged shapes (M, N not multiples of
// 128, K of 32, or unaligned pointers) take the kEdge instantiation: guarded scalar loads
// that zero-fill, guarded scalar stores.
namespace wmma_tile {
constexpr int kBM = 128, kBN = 128, kBK = 32;
constexpr int kWarpsM = 4, kWarpsN = 2;                     // 8 warps
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;     // 32 x 64 per warp
constexpr int kFragsM = kWM / 16, kFragsN = kWN / 16;       // 2 x 4 fragments
constexpr int kThreads = kWarpsM * kWarpsN * 32;            // 256
constexpr int kPad = 8;                                     // elements: 16 bytes
constexpr int kLdA = kBK + kPad, kLdB = kBN + kPad;         // 40 and 136
}  // namespace wmma_tile

// A fragment from shared memory. For fp16, wmma::load_matrix_sync becomes ldmatrix (LDSM);
// for bf16, CUDA 13.0's mma.hpp passes the pointer on as a generic one and the load becomes
// 4x as many generic LDs (48 instead of 12 per K step here), so bf16 says `.shared` itself.
template <typename Frag, typename T>
__device__ __forceinline__ void load_fragment(Frag& f, const T* p, unsigned ldm) {
  nvcuda::wmma::load_matrix_sync(f, p, ldm);
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
using BfA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
                                   nvcuda::wmma::row_major>;
using BfB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
                                   nvcuda::wmma::row_major>;
__device__ __forceinline__ void load_fragment(BfA& f, const __nv_bfloat16* p, unsigned ldm) {
  static_assert(sizeof(f.x) == 16, "a bf16 m16n16k16 A fragment is four 32-bit registers");
  unsigned* r = reinterpret_cast<unsigned*>(f.x);
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(ldm));
}
__device__ __forceinline__ void load_fragment(BfB& f, const __nv_bfloat16* p, unsigned ldm) {
  static_assert(sizeof(f.x) == 16, "a bf16 m16n16k16 B fragment is four 32-bit registers");
  unsigned* r = reinterpret_cast<unsigned*>(f.x);
  asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(ldm));
}
#endif

template <typename T, bool kEdge>
__global__ void __launch_bounds__(wmma_tile::kThreads)
    matmul_wmma_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                       int m, int n, int k) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using namespace wmma_tile;
  namespace wmma = nvcuda::wmma;
  // wmma::load_matrix_sync wants 32-byte aligned tile pointers: the arrays are, and every
  // fragment starts at a multiple of 16 rows (16 * 80 or 16 * 272 bytes) and 16 columns.
  __shared__ __align__(32) T as[kBM][kLdA];
  __shared__ __align__(32) T bs[kBK][kLdB];
  __shared__ __align__(32) float scratch[kWarpsM * kWarpsN][16 * 16];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int rows = m - row0, cols = n - col0;
  const T* a_blk = a + static_cast<int64_t>(row0) * k;
  const T* b_blk = b + col0;
  // 16-byte chunks (8 elements): A's tile is 128 rows of 4, B's 32 rows of 16; 2 each.
  const int a_row = tid / (kBK / 8), a_col = (tid % (kBK / 8)) * 8;
  const int b_row = tid / (kBN / 8), b_col = (tid % (kBN / 8)) * 8;
  constexpr int kARowStep = kThreads / (kBK / 8), kBRowStep = kThreads / (kBN / 8);  // 64, 16
  const T zero = gb_from_float<T>(0.0f);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int t = 0; t < k; t += kBK) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int ra = a_row + p * kARowStep, rb = b_row + p * kBRowStep;
      const T* ga = a_blk + static_cast<int64_t>(ra) * k + t + a_col;
      const T* gb = b_blk + static_cast<int64_t>(t + rb) * n + b_col;
      if constexpr (!kEdge) {
        *reinterpret_cast<uint4*>(&as[ra][a_col]) = *reinterpret_cast<const uint4*>(ga);
        *reinterpret_cast<uint4*>(&bs[rb][b_col]) = *reinterpret_cast<const uint4*>(gb);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          as[ra][a_col + e] = (ra < rows && t + a_col + e < k) ? ga[e] : zero;
          bs[rb][b_col + e] = (t + rb < k && b_col + e < cols) ? gb[e] : zero;
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragsM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
        load_fragment(fa[i], &as[warp_m * kWM + i * 16][kk], kLdA);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j)
        load_fragment(fb[j], &bs[kk][warp_n * kWN + j * 16], kLdB);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }

  // Out through the warp's scratch: each lane rounds and writes 8 consecutive elements.
  float* mine = scratch[warp];
  const int sr = lane / 2, sc = (lane % 2) * 8;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      wmma::store_matrix_sync(mine, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = warp_m * kWM + i * 16 + sr, cc = warp_n * kWN + j * 16 + sc;
      T* gc = c + static_cast<int64_t>(row0 + r) * n + col0 + cc;
      if constexpr (!kEdge) {
        alignas(16) T packed[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) packed[e] = gb_from_float<T>(mine[sr * 16 + sc + e]);
        *reinterpret_cast<uint4*>(gc) = *reinterpret_cast<const uint4*>(packed);
      } else if (r < rows) {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (cc + e < cols) gc[e] = gb_from_float<T>(mine[sr * 16 + sc + e]);
      }
      __syncwarp();  // the scratch is rewritten by the next fragment
    }
  }
#endif
}

template <typename T>
static cudaError_t launch_wmma(const T* a, const T* b, T* c, int m, int n, int k,
                               cudaStream_t stream) {
  using namespace wmma_tile;
  const dim3 grid((n - 1) / kBN + 1, (m - 1) / kBM + 1);
  const auto bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                    reinterpret_cast<uintptr_t>(c);
  const bool whole = k > 0 && m % kBM == 0 && n % kBN == 0 && k % kBK == 0 && bits % 16 == 0;
  if (whole) {
    matmul_wmma_kernel<T, false><<<grid, kThreads, 0, stream>>>(a, b, c, m, n, k);
  } else {
    matmul_wmma_kernel<T, true><<<grid, kThreads, 0, stream>>>(a, b, c, m, n, k);
  }
  return cudaGetLastError();
}

cudaError_t matmul_wmma_launch(const void* a, const void* b, void* c, int m, int n, int k,
                               int dtype, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;  // an empty grid is a launch error
  int device = 0, major = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err != cudaSuccess) return err;
  if (major < 8) return cudaErrorNotSupported;  // bf16 wmma fragments need sm_80+
  switch (dtype) {
    case GB_FLOAT16:
      return launch_wmma(static_cast<const __half*>(a), static_cast<const __half*>(b),
                         static_cast<__half*>(c), m, n, k, stream);
    case GB_BFLOAT16:
      return launch_wmma(static_cast<const __nv_bfloat16*>(a),
                         static_cast<const __nv_bfloat16*>(b), static_cast<__nv_bfloat16*>(c),
                         m, n, k, stream);
    default:
      return cudaErrorInvalidValue;  // fp16/bf16 only: fp32 has no 16x16x16 wmma shape
  }
}

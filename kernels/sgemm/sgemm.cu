// sgemm.cu — the SGEMM ladder: C[M,N] = A[M,K] @ B[K,N], fp32, row-major contiguous.
//
// Seven kernels, each one step up from the last, written from first principles:
//   naive -> coalesced -> smem -> blocktile_1d -> blocktile_2d -> vectorized -> warptiling
//
// Napkin math for the whole ladder, at 4096^3 on an H200 (132 SMs, ~1.98 GHz boost):
//   work:   2 * M * N * K = 137 GFLOP;
//   peak:   132 SMs * 128 FP32 lanes * 2 FLOP (FFMA) * 1.98 GHz ~= 67 TFLOP/s, so >= 2.05 ms;
//           cuBLAS fp32 (no TF32): ~51 TFLOP/s there (2.69 ms, docs/measurement.md "Ceilings");
//   bytes:  A, B and C once: 3 * 4096^2 * 4 B = 201 MB, 0.04 ms at 4.8 TB/s.
// So every step is about feeding the FFMA units, not about DRAM: 683 FLOP/byte is far above
// the H200's fp32 ridge (~14 FLOP/byte). What starves them is, step by step: uncoalesced
// global loads, then global-load count, then shared-memory load count, then shared-memory
// bank conflicts and instruction overhead, then latency that nothing overlaps.
// The model used below: per clock an SM issues 4 warp-wide FFMAs (128 lanes) but its shared
// memory serves one 128-byte wavefront (a broadcast or conflict-free 32-bit LDS is one; an
// n-way bank conflict is n). So W wavefronts per F warp-FFMAs cap a kernel at F / (4 W) of
// peak whenever that is below 1.
//
// Every kernel is correct for any M, N, K >= 0. The tiled ones (blocktile_1d onwards) have
// two instantiations: kEdge = false, the fast path, when M, N, K are multiples of the block
// tile and the pointers are 16-byte aligned (the float4 steps need it); kEdge = true, the
// same algorithm with every global load bounds-checked (zero fill) and every store guarded,
// otherwise. No kernel reads or writes outside A, B or C.
//
// Grids put column blocks on x (up to 2^31 - 1 blocks) and row blocks on y (up to 65535),
// except naive, whose x walks rows on purpose. Element offsets are 64-bit wherever a row
// index is multiplied by a leading dimension, so matrices of more than 2^31 elements work;
// M, N and K themselves must fit in an int (the binding checks).
#include <cstdint>

#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ float4 load_float4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}

__device__ __forceinline__ void store_float4(float* p, float4 v) {
  *reinterpret_cast<float4*>(p) = v;
}

// 16 bytes of row `r`, columns c..c+3, of a rows x cols row-major matrix `p` with leading
// dimension `ld`. Fast path: one 128-bit load. Edge path: four guarded scalar loads, zero
// outside the matrix (the ragged edge of a tile then adds nothing to the dot products).
template <bool kEdge>
__device__ __forceinline__ float4 load_tile_float4(const float* p, int r, int c, int rows,
                                                   int cols, int ld) {
  const float* q = p + static_cast<int64_t>(r) * ld + c;
  if constexpr (!kEdge) {
    return load_float4(q);
  } else {
    const bool in_row = r < rows;
    return make_float4(in_row && c + 0 < cols ? q[0] : 0.0f, in_row && c + 1 < cols ? q[1] : 0.0f,
                       in_row && c + 2 < cols ? q[2] : 0.0f, in_row && c + 3 < cols ? q[3] : 0.0f);
  }
}

// The mirror image for C: one 128-bit store, or up to four guarded scalar stores.
template <bool kEdge>
__device__ __forceinline__ void store_tile_float4(float* p, int r, int c, int rows, int cols,
                                                  int ld, float4 v) {
  float* q = p + static_cast<int64_t>(r) * ld + c;
  if constexpr (!kEdge) {
    store_float4(q, v);
  } else {
    if (r >= rows) return;
    if (c + 0 < cols) q[0] = v.x;
    if (c + 1 < cols) q[1] = v.y;
    if (c + 2 < cols) q[2] = v.z;
    if (c + 3 < cols) q[3] = v.w;
  }
}

// One scalar element, guarded in the edge path.
template <bool kEdge>
__device__ __forceinline__ float load_tile(const float* p, int r, int c, int rows, int cols,
                                           int ld) {
  if constexpr (kEdge) {
    if (r >= rows || c >= cols) return 0.0f;
  }
  return p[static_cast<int64_t>(r) * ld + c];
}

// ----------------------------------------------------------------------------------------
// 1. naive: one thread per output, threadIdx.x walking ROWS.
//
// A warp is 32 consecutive rows of one column. Each of its A loads hits 32 different rows,
// 32 sectors for 128 useful bytes; its C store likewise; only B's load is one broadcast.
// 2 * K loads per output and ~32 sectors per warp-load: L1/L2 catch much of it, but the
// LSU/L1 throughput caps it at ~1-2% of peak. Expected on an H200 at 4096^3: ~0.5-1 TFLOP/s
// (~1-2% of cuBLAS).
__global__ void __launch_bounds__(1024)
    sgemm_naive_kernel(const float* __restrict__ a, const float* __restrict__ b,
                       float* __restrict__ c, int m, int n, int k) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  const float* a_row = a + static_cast<int64_t>(row) * k;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += a_row[i] * b[static_cast<int64_t>(i) * n + col];
  c[static_cast<int64_t>(row) * n + col] = acc;
}

// ----------------------------------------------------------------------------------------
// 2. coalesced: the same arithmetic, threads of a warp along COLUMNS.
//
// Now a warp is 32 consecutive columns of one row: its B load is one 128-byte line, its A
// load one broadcast, its C store one line. Same 2 * K loads per output, but 32x fewer
// sectors per load. Limited by L1 load throughput: ~2 loads per FFMA. Expected: ~4-6
// TFLOP/s (~10% of cuBLAS; matmul/naive, the same idea in 16x16 blocks, runs 5.4).
constexpr int kCoalescedBlock = 32;

__global__ void __launch_bounds__(kCoalescedBlock* kCoalescedBlock)
    sgemm_coalesced_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int m, int n, int k) {
  const int row = blockIdx.y * kCoalescedBlock + threadIdx.x / kCoalescedBlock;
  const int col = blockIdx.x * kCoalescedBlock + threadIdx.x % kCoalescedBlock;
  if (row >= m || col >= n) return;
  const float* a_row = a + static_cast<int64_t>(row) * k;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += a_row[i] * b[static_cast<int64_t>(i) * n + col];
  c[static_cast<int64_t>(row) * n + col] = acc;
}

// ----------------------------------------------------------------------------------------
// 3. smem: 32 x 32 tiles of A and B staged in shared memory, one output per thread.
//
// Each element loaded from global memory now serves 32 outputs: global loads drop 32x
// (2 * M * N * K / 32 in all). But every FFMA still needs two shared-memory loads (As is a
// broadcast, Bs hits 32 banks): W = 2 per F = 1, capped at 1/8 of peak = 8.4 TFLOP/s.
// Expected: ~8-9 TFLOP/s (~17% of cuBLAS; matmul/tiled, the same kernel, runs 8.7).
constexpr int kSmemTile = 32;

__global__ void __launch_bounds__(kSmemTile* kSmemTile)
    sgemm_smem_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[kSmemTile][kSmemTile];
  __shared__ float bs[kSmemTile][kSmemTile];
  const int tr = threadIdx.x / kSmemTile, tc = threadIdx.x % kSmemTile;
  const int row = blockIdx.y * kSmemTile + tr;
  const int col = blockIdx.x * kSmemTile + tc;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kSmemTile) {
    // Out-of-range elements load as 0; threads outside C still load and sync.
    as[tr][tc] = (row < m && t + tc < k) ? a[static_cast<int64_t>(row) * k + t + tc] : 0.0f;
    bs[tr][tc] = (t + tr < k && col < n) ? b[static_cast<int64_t>(t + tr) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kSmemTile; ++i) acc += as[tr][i] * bs[i][tc];
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<int64_t>(row) * n + col] = acc;
}

// ----------------------------------------------------------------------------------------
// 4. blocktile_1d: each thread computes a COLUMN of TM = 8 outputs.
//
// Block tile 64 x 64, K step 8, 512 threads. Per k: one Bs load is reused for 8 FFMAs, and
// the 8 As loads are warp-wide broadcasts (a warp is one thread_row): W = 9 per F = 8, a cap
// of 22% of peak (15 TFLOP/s); the 64 x 64 tile halves global loads per output vs 32 x 32.
// Expected: ~13-18 TFLOP/s (~30-35% of cuBLAS), bounded by the As loads.
constexpr int k1dBM = 64, k1dBN = 64, k1dBK = 8, k1dTM = 8;
constexpr int k1dThreads = k1dBM * k1dBN / k1dTM;  // 512

template <bool kEdge>
__global__ void __launch_bounds__(k1dThreads)
    sgemm_blocktile_1d_kernel(const float* __restrict__ a, const float* __restrict__ b,
                              float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[k1dBM * k1dBK];  // [BM][BK]
  __shared__ float bs[k1dBK * k1dBN];  // [BK][BN]
  const int row0 = blockIdx.y * k1dBM, col0 = blockIdx.x * k1dBN;
  const int tid = threadIdx.x;
  const int thread_col = tid % k1dBN, thread_row = tid / k1dBN;  // rows thread_row*TM..+TM-1
  // One element of each tile per thread: A's 64 x 8, B's 8 x 64.
  const int a_row = tid / k1dBK, a_col = tid % k1dBK;
  const int b_row = tid / k1dBN, b_col = tid % k1dBN;
  const float* a_blk = a + static_cast<int64_t>(row0) * k;
  const float* b_blk = b + col0;
  const int rows = m - row0, cols = n - col0;  // what is left of A and C below/right of us
  float acc[k1dTM] = {};
  for (int t = 0; t < k; t += k1dBK) {
    as[a_row * k1dBK + a_col] = load_tile<kEdge>(a_blk, a_row, t + a_col, rows, k, k);
    bs[b_row * k1dBN + b_col] = load_tile<kEdge>(b_blk, t + b_row, b_col, k, cols, n);
    __syncthreads();
#pragma unroll
    for (int d = 0; d < k1dBK; ++d) {
      const float bv = bs[d * k1dBN + thread_col];
#pragma unroll
      for (int i = 0; i < k1dTM; ++i) acc[i] += as[(thread_row * k1dTM + i) * k1dBK + d] * bv;
    }
    __syncthreads();
  }
  float* c_blk = c + static_cast<int64_t>(row0) * n + col0;
#pragma unroll
  for (int i = 0; i < k1dTM; ++i) {
    const int r = thread_row * k1dTM + i;
    if (!kEdge || (r < rows && thread_col < cols)) c_blk[static_cast<int64_t>(r) * n + thread_col] = acc[i];
  }
}

// ----------------------------------------------------------------------------------------
// 5. blocktile_2d: a TM x TN = 8 x 8 register tile per thread.
//
// Block tile 128 x 128, K step 8, 256 threads. Per k a thread loads 8 values of As and 8 of
// Bs into registers and does their 64-FFMA outer product: 16 LDS per 64 FFMA (4x fewer per
// FFMA than step 4), and a 128 x 128 tile halves global loads per output again. Left on the
// table: a warp's two thread_rows read As 64 floats apart (same bank: 2 wavefronts per LDS)
// and its 16 thread_cols read Bs 8 floats apart (4-way conflicts unless the compiler fuses
// them into LDS.128): W = 24-48 per F = 64, a cap of 33-67% of peak, plus scalar global
// loads and no overlap of loads with math. Expected: ~25-35 TFLOP/s (~50-65% of cuBLAS).
constexpr int k2dBM = 128, k2dBN = 128, k2dBK = 8, k2dTM = 8, k2dTN = 8;
constexpr int k2dThreads = k2dBM * k2dBN / (k2dTM * k2dTN);  // 256

template <bool kEdge>
__global__ void __launch_bounds__(k2dThreads)
    sgemm_blocktile_2d_kernel(const float* __restrict__ a, const float* __restrict__ b,
                              float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[k2dBM * k2dBK];  // [BM][BK]
  __shared__ float bs[k2dBK * k2dBN];  // [BK][BN]
  const int row0 = blockIdx.y * k2dBM, col0 = blockIdx.x * k2dBN;
  const int tid = threadIdx.x;
  const int thread_col = tid % (k2dBN / k2dTN), thread_row = tid / (k2dBN / k2dTN);
  // 1024 elements per tile, 4 per thread: A in 32-row strides, B in 2-row strides.
  const int a_row = tid / k2dBK, a_col = tid % k2dBK;
  constexpr int kStrideA = k2dThreads / k2dBK;  // 32
  const int b_row = tid / k2dBN, b_col = tid % k2dBN;
  constexpr int kStrideB = k2dThreads / k2dBN;  // 2
  const float* a_blk = a + static_cast<int64_t>(row0) * k;
  const float* b_blk = b + col0;
  const int rows = m - row0, cols = n - col0;
  float acc[k2dTM][k2dTN] = {};
  float reg_m[k2dTM], reg_n[k2dTN];
  for (int t = 0; t < k; t += k2dBK) {
#pragma unroll
    for (int off = 0; off < k2dBM; off += kStrideA) {
      as[(a_row + off) * k2dBK + a_col] = load_tile<kEdge>(a_blk, a_row + off, t + a_col, rows, k, k);
    }
#pragma unroll
    for (int off = 0; off < k2dBK; off += kStrideB) {
      bs[(b_row + off) * k2dBN + b_col] = load_tile<kEdge>(b_blk, t + b_row + off, b_col, k, cols, n);
    }
    __syncthreads();
#pragma unroll
    for (int d = 0; d < k2dBK; ++d) {
#pragma unroll
      for (int i = 0; i < k2dTM; ++i) reg_m[i] = as[(thread_row * k2dTM + i) * k2dBK + d];
#pragma unroll
      for (int j = 0; j < k2dTN; ++j) reg_n[j] = bs[d * k2dBN + thread_col * k2dTN + j];
#pragma unroll
      for (int i = 0; i < k2dTM; ++i)
#pragma unroll
        for (int j = 0; j < k2dTN; ++j) acc[i][j] += reg_m[i] * reg_n[j];
    }
    __syncthreads();
  }
  float* c_blk = c + static_cast<int64_t>(row0) * n + col0;
#pragma unroll
  for (int i = 0; i < k2dTM; ++i) {
    const int r = thread_row * k2dTM + i;
#pragma unroll
    for (int j = 0; j < k2dTN; ++j) {
      const int cc = thread_col * k2dTN + j;
      if (!kEdge || (r < rows && cc < cols)) c_blk[static_cast<int64_t>(r) * n + cc] = acc[i][j];
    }
  }
}

// ----------------------------------------------------------------------------------------
// 6. vectorized: step 5 with 128-bit accesses everywhere, A transposed in shared memory.
//
// A's tile is stored transposed (as[BK][BM]), so a thread's 8 values of As for one k are
// contiguous: 2 LDS.128 instead of 8 LDS.32; Bs likewise: 4 LDS.128 per 64 FFMA (4x fewer
// load instructions than step 5). Global loads are float4 (one per thread per tile for A
// and for B) and C is written with float4 stores. Left: a quarter-warp's Bs reads, 8 float4
// 32 bytes apart, collide 2-way (W ~ 16-20 per F = 64: a cap of ~80% of peak), the
// transposing As stores conflict 2-way, and every K step waits for its loads behind two
// __syncthreads. Expected: ~33-40 TFLOP/s (~65-78% of cuBLAS).
constexpr int kVecBM = 128, kVecBN = 128, kVecBK = 8, kVecTM = 8, kVecTN = 8;
constexpr int kVecThreads = kVecBM * kVecBN / (kVecTM * kVecTN);  // 256

template <bool kEdge>
__global__ void __launch_bounds__(kVecThreads)
    sgemm_vectorized_kernel(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) float as[kVecBK * kVecBM];  // [BK][BM]: transposed
  __shared__ __align__(16) float bs[kVecBK * kVecBN];  // [BK][BN]
  const int row0 = blockIdx.y * kVecBM, col0 = blockIdx.x * kVecBN;
  const int tid = threadIdx.x;
  const int thread_col = tid % (kVecBN / kVecTN), thread_row = tid / (kVecBN / kVecTN);
  // A's tile: 128 rows of two float4; B's: 8 rows of 32 float4. One float4 each per thread.
  const int a_row = tid / (kVecBK / 4), a_col = (tid % (kVecBK / 4)) * 4;
  const int b_row = tid / (kVecBN / 4), b_col = (tid % (kVecBN / 4)) * 4;
  const float* a_blk = a + static_cast<int64_t>(row0) * k;
  const float* b_blk = b + col0;
  const int rows = m - row0, cols = n - col0;
  float acc[kVecTM][kVecTN] = {};
  float reg_m[kVecTM], reg_n[kVecTN];
  for (int t = 0; t < k; t += kVecBK) {
    const float4 av = load_tile_float4<kEdge>(a_blk, a_row, t + a_col, rows, k, k);
    as[(a_col + 0) * kVecBM + a_row] = av.x;
    as[(a_col + 1) * kVecBM + a_row] = av.y;
    as[(a_col + 2) * kVecBM + a_row] = av.z;
    as[(a_col + 3) * kVecBM + a_row] = av.w;
    store_float4(&bs[b_row * kVecBN + b_col],
                 load_tile_float4<kEdge>(b_blk, t + b_row, b_col, k, cols, n));
    __syncthreads();
#pragma unroll
    for (int d = 0; d < kVecBK; ++d) {
      const float4 m0 = load_float4(&as[d * kVecBM + thread_row * kVecTM]);
      const float4 m1 = load_float4(&as[d * kVecBM + thread_row * kVecTM + 4]);
      const float4 n0 = load_float4(&bs[d * kVecBN + thread_col * kVecTN]);
      const float4 n1 = load_float4(&bs[d * kVecBN + thread_col * kVecTN + 4]);
      reg_m[0] = m0.x; reg_m[1] = m0.y; reg_m[2] = m0.z; reg_m[3] = m0.w;
      reg_m[4] = m1.x; reg_m[5] = m1.y; reg_m[6] = m1.z; reg_m[7] = m1.w;
      reg_n[0] = n0.x; reg_n[1] = n0.y; reg_n[2] = n0.z; reg_n[3] = n0.w;
      reg_n[4] = n1.x; reg_n[5] = n1.y; reg_n[6] = n1.z; reg_n[7] = n1.w;
#pragma unroll
      for (int i = 0; i < kVecTM; ++i)
#pragma unroll
        for (int j = 0; j < kVecTN; ++j) acc[i][j] += reg_m[i] * reg_n[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kVecTM; ++i) {
    const int r = thread_row * kVecTM + i;
    float* c_blk = c + static_cast<int64_t>(row0) * n + col0;
#pragma unroll
    for (int j = 0; j < kVecTN; j += 4) {
      store_tile_float4<kEdge>(c_blk, r, thread_col * kVecTN + j, rows, cols, n,
                               make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
    }
  }
}

// ----------------------------------------------------------------------------------------
// 7. warptiling: a warp-level tile on top of 2D blocktiling, double-buffered.
//
// Block tile 128 x 128, K step 16, 256 threads = 8 warps in a 2 x 4 grid, each warp owning a
// 64 x 32 piece of C. Inside a warp the piece is cut into WNITER = 2 sub-tiles of 64 x 16;
// in each the 32 lanes form an 8 x 4 grid and own 8 x 4 outputs, so a thread still holds
// 8 x 8 = 64 accumulators and does 64 FFMA per 4 LDS.128 (2 of As, 2 of Bs), as in step 6,
// but now a quarter-warp's Bs reads are 4 consecutive float4 (no bank conflict) and a warp
// touches only its own 64 rows and 32 columns of the tiles (W ~ 8 per F = 64: shared memory
// is no longer the cap; FFMA issue and latency are). The shared tiles are double
// buffered: while the warps compute on one, the next K slice is already loaded into
// registers (2 float4 of A and 2 of B per thread) and written into the other buffer, so
// one __syncthreads per K step instead of two and global latency overlaps compute. As is
// transposed and padded to 132 floats a row (2-way instead of 4-way conflicts on the
// transposing stores). 33 KB of shared memory and <= 128 registers (__launch_bounds__ 256
// x 2): two blocks, 16 warps, per SM. Expected: ~40-46 TFLOP/s (~80-90% of cuBLAS).
constexpr int kWtBM = 128, kWtBN = 128, kWtBK = 16;
constexpr int kWtWM = 64, kWtWN = 32;        // one warp's piece of C
constexpr int kWtWNIter = 2;                 // sub-tiles along N per warp
constexpr int kWtTM = 8, kWtTN = 4;          // a thread's outputs per sub-tile
constexpr int kWtSubN = kWtWN / kWtWNIter;   // 16
constexpr int kWtLaneCols = kWtSubN / kWtTN; // 4 lanes across a sub-tile, 8 down
constexpr int kWtThreads = (kWtBM / kWtWM) * (kWtBN / kWtWN) * 32;  // 256
constexpr int kWtPadM = kWtBM + 4;           // As row length in floats (16-byte multiple)
static_assert(kWtWM == (32 / kWtLaneCols) * kWtTM, "a warp's lanes must tile WM exactly");
static_assert(kWtBM * kWtBK / 4 == 2 * kWtThreads && kWtBK * kWtBN / 4 == 2 * kWtThreads,
              "two float4 of A and two of B per thread per K step");

template <bool kEdge>
__global__ void __launch_bounds__(kWtThreads, 2)
    sgemm_warptiling_kernel(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) float as[2][kWtBK][kWtPadM];  // transposed: [k][row]
  __shared__ __align__(16) float bs[2][kWtBK][kWtBN];
  const int row0 = blockIdx.y * kWtBM, col0 = blockIdx.x * kWtBN;
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warp_row = warp / (kWtBN / kWtWN), warp_col = warp % (kWtBN / kWtWN);
  const int lane_row = lane / kWtLaneCols, lane_col = lane % kWtLaneCols;
  // Loads: A's tile is 128 rows of 4 float4, B's 16 rows of 32 float4; two of each per thread.
  const int a_row = tid / (kWtBK / 4), a_col = (tid % (kWtBK / 4)) * 4;
  constexpr int kARowStride = kWtThreads / (kWtBK / 4);  // 64
  const int b_row = tid / (kWtBN / 4), b_col = (tid % (kWtBN / 4)) * 4;
  constexpr int kBRowStride = kWtThreads / (kWtBN / 4);  // 8
  const float* a_blk = a + static_cast<int64_t>(row0) * k;
  const float* b_blk = b + col0;
  const int rows = m - row0, cols = n - col0;

  float4 next_a[2], next_b[2];
  auto load_slice = [&](int t) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      next_a[p] = load_tile_float4<kEdge>(a_blk, a_row + p * kARowStride, t + a_col, rows, k, k);
      next_b[p] = load_tile_float4<kEdge>(b_blk, t + b_row + p * kBRowStride, b_col, k, cols, n);
    }
  };
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int r = a_row + p * kARowStride;
      as[buf][a_col + 0][r] = next_a[p].x;
      as[buf][a_col + 1][r] = next_a[p].y;
      as[buf][a_col + 2][r] = next_a[p].z;
      as[buf][a_col + 3][r] = next_a[p].w;
      store_float4(&bs[buf][b_row + p * kBRowStride][b_col], next_b[p]);
    }
  };

  float acc[kWtTM][kWtWNIter * kWtTN] = {};
  load_slice(0);
  store_slice(0);
  __syncthreads();
  int buf = 0;
  for (int t = 0; t < k; t += kWtBK) {
    const bool more = t + kWtBK < k;
    if (more) load_slice(t + kWtBK);  // in flight while we compute on `buf`
#pragma unroll
    for (int d = 0; d < kWtBK; ++d) {
      const float* am = &as[buf][d][warp_row * kWtWM + lane_row * kWtTM];
      const float4 m0 = load_float4(am), m1 = load_float4(am + 4);
      const float reg_m[kWtTM] = {m0.x, m0.y, m0.z, m0.w, m1.x, m1.y, m1.z, m1.w};
      float reg_n[kWtWNIter * kWtTN];
#pragma unroll
      for (int w = 0; w < kWtWNIter; ++w) {
        const float4 v = load_float4(&bs[buf][d][warp_col * kWtWN + w * kWtSubN + lane_col * kWtTN]);
        reg_n[w * kWtTN + 0] = v.x;
        reg_n[w * kWtTN + 1] = v.y;
        reg_n[w * kWtTN + 2] = v.z;
        reg_n[w * kWtTN + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < kWtTM; ++i)
#pragma unroll
        for (int j = 0; j < kWtWNIter * kWtTN; ++j) acc[i][j] += reg_m[i] * reg_n[j];
    }
    // The other buffer was last read before the previous __syncthreads: safe to fill.
    if (more) store_slice(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
  float* c_blk = c + static_cast<int64_t>(row0) * n + col0;
#pragma unroll
  for (int i = 0; i < kWtTM; ++i) {
    const int r = warp_row * kWtWM + lane_row * kWtTM + i;
#pragma unroll
    for (int w = 0; w < kWtWNIter; ++w) {
      const int cc = warp_col * kWtWN + w * kWtSubN + lane_col * kWtTN;
      store_tile_float4<kEdge>(c_blk, r, cc, rows, cols, n,
                               make_float4(acc[i][w * kWtTN + 0], acc[i][w * kWtTN + 1],
                                           acc[i][w * kWtTN + 2], acc[i][w * kWtTN + 3]));
    }
  }
}

// ----------------------------------------------------------------------------------------
// Launch helpers.

inline unsigned blocks_for(int extent, int tile) {
  return static_cast<unsigned>((extent - 1) / tile + 1);  // extent >= 1; no int overflow
}

// The fast (unchecked, 128-bit) path needs whole tiles and 16-byte aligned rows and bases;
// k == 0 goes through the checked path (it writes zeros without loading anything).
inline bool whole_tiles(const void* a, const void* b, const void* c, int m, int n, int k,
                        int bm, int bn, int bk) {
  const auto bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                    reinterpret_cast<uintptr_t>(c);
  return k > 0 && m % bm == 0 && n % bn == 0 && k % bk == 0 && k % 4 == 0 && n % 4 == 0 &&
         bits % 16 == 0;
}

template <typename Kernel>
cudaError_t launch_tiled(Kernel fast, Kernel edge, dim3 block, int bm, int bn, int bk,
                         const float* a, const float* b, float* c, int m, int n, int k,
                         cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;  // an empty grid is a launch error
  const dim3 grid(blocks_for(n, bn), blocks_for(m, bm));
  Kernel kernel = whole_tiles(a, b, c, m, n, k, bm, bn, bk) ? fast : edge;
  kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError();
}

}  // namespace

cudaError_t sgemm_naive_launch(const float* a, const float* b, float* c, int m, int n, int k,
                               cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 block(32, 32);  // x: 32 consecutive rows per warp, the uncoalesced choice
  const dim3 grid(blocks_for(m, 32), blocks_for(n, 32));
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError();
}

cudaError_t sgemm_coalesced_launch(const float* a, const float* b, float* c, int m, int n,
                                   int k, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(blocks_for(n, kCoalescedBlock), blocks_for(m, kCoalescedBlock));
  sgemm_coalesced_kernel<<<grid, kCoalescedBlock * kCoalescedBlock, 0, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError();
}

cudaError_t sgemm_smem_launch(const float* a, const float* b, float* c, int m, int n, int k,
                              cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const dim3 grid(blocks_for(n, kSmemTile), blocks_for(m, kSmemTile));
  sgemm_smem_kernel<<<grid, kSmemTile * kSmemTile, 0, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError();
}

cudaError_t sgemm_blocktile_1d_launch(const float* a, const float* b, float* c, int m, int n,
                                      int k, cudaStream_t stream) {
  return launch_tiled(sgemm_blocktile_1d_kernel<false>, sgemm_blocktile_1d_kernel<true>,
                      dim3(k1dThreads), k1dBM, k1dBN, k1dBK, a, b, c, m, n, k, stream);
}

cudaError_t sgemm_blocktile_2d_launch(const float* a, const float* b, float* c, int m, int n,
                                      int k, cudaStream_t stream) {
  return launch_tiled(sgemm_blocktile_2d_kernel<false>, sgemm_blocktile_2d_kernel<true>,
                      dim3(k2dThreads), k2dBM, k2dBN, k2dBK, a, b, c, m, n, k, stream);
}

cudaError_t sgemm_vectorized_launch(const float* a, const float* b, float* c, int m, int n,
                                    int k, cudaStream_t stream) {
  return launch_tiled(sgemm_vectorized_kernel<false>, sgemm_vectorized_kernel<true>,
                      dim3(kVecThreads), kVecBM, kVecBN, kVecBK, a, b, c, m, n, k, stream);
}

cudaError_t sgemm_warptiling_launch(const float* a, const float* b, float* c, int m, int n,
                                    int k, cudaStream_t stream) {
  return launch_tiled(sgemm_warptiling_kernel<false>, sgemm_warptiling_kernel<true>,
                      dim3(kWtThreads), kWtBM, kWtBN, kWtBK, a, b, c, m, n, k, stream);
}

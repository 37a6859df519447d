// softmax.cu — y[r, :] = softmax(x[r, :]) over the last axis of a rows x cols
// row-major matrix: three rungs of the ladder, each answering the previous one's problem.
//
// Napkin math per element: ~5 FLOPs (max-compare, subtract, exp, add, divide;
// exp counted as one), and at least one read and one write of sizeof(T) bytes:
// 0.625 FLOP/byte in fp32, memory-bound. The best a kernel can do is move
// 2 * rows * cols * sizeof(T) bytes at the card's copy bandwidth.
//
//   naive         three passes (max, sum, write), one thread per row;
//   online        one thread block per row, coalesced; ONE pass computes the max and the
//                 sum together (Milakov & Gimelshein's online softmax), then a write pass:
//                 x is read twice (the second time mostly from L2), y written once;
//   block_reduce  one block per row, the row held in registers (up to 32 floats a thread,
//                 so rows up to 32768 elements), 16-byte vector loads and stores where the
//                 row is aligned, warp shuffles + a 32-float shared-memory step for the
//                 block-wide max and sum: x read once, y written once, the minimum. Longer
//                 rows fall back to the online kernel with vector loads.
//
// Why the naive kernel is slow:
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
#include <cfloat>
#include <cmath>
#include <cstdint>

#include <gpubench/rows.cuh>

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

// ------------------------------------------------------------------ shared pieces

// exp(v - m) as exp2(v * log2(e) - m * log2(e)): one FFMA and one MUFU.EX2.
constexpr float kLog2e = 1.4426950408889634f;

// ------------------------------------------------------------------ online

// The running (max m, sum d of exp(x - m)) of the values seen so far, updated by one
// value: a new max rescales the sum by exp(old max - new max). The start is m = -FLT_MAX
// (not -inf) so that -inf inputs (masked logits) never make -inf - -inf = NaN.
__device__ __forceinline__ void online_update(float& m, float& d, float v) {
  if (v > m) {
    d = d * exp2f((m - v) * kLog2e) + 1.0f;
    m = v;
  } else {
    d += exp2f((v - m) * kLog2e);
  }
}

// Two partial (m, d) merged: the one with the smaller max is rescaled to the larger.
__device__ __forceinline__ void online_merge(float& m, float& d, float m2, float d2) {
  const float mx = fmaxf(m, m2);
  d = d * exp2f((m - mx) * kLog2e) + d2 * exp2f((m2 - mx) * kLog2e);
  m = mx;
}

constexpr int kOnlineThreads = 256;

// One block per row. Pass 1 reads the row once (coalesced: thread t takes elements t,
// t + 256, ...), keeping a per-thread (m, d); warps merge theirs with shuffles, then the
// 8 warp results meet in shared memory. Pass 2 reads the row again and writes
// exp(x - m) / d. VEC > 1 (16-byte loads) is block_reduce's fallback for long rows.
template <typename T, int VEC>
__global__ void __launch_bounds__(kOnlineThreads)
    softmax_online_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
  __shared__ float part_m[32], part_d[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t packs = cols / VEC;  // VEC divides cols (the launcher checks)
  float m = -FLT_MAX, d = 0.0f;
#pragma unroll 4
  for (int64_t j = threadIdx.x; j < packs; j += kOnlineThreads) {
    float v[VEC];
    gb_load_floats<T, VEC>(xr + j * VEC, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) online_update(m, d, v[k]);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    online_merge(m, d, __shfl_xor_sync(~0u, m, offset), __shfl_xor_sync(~0u, d, offset));
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    part_m[warp] = m;
    part_d[warp] = d;
  }
  __syncthreads();
  m = lane < kOnlineThreads / 32 ? part_m[lane] : -FLT_MAX;
  d = lane < kOnlineThreads / 32 ? part_d[lane] : 0.0f;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    online_merge(m, d, __shfl_xor_sync(~0u, m, offset), __shfl_xor_sync(~0u, d, offset));
  }
  const float inv = 1.0f / d, m_log2 = m * kLog2e;
#pragma unroll 4
  for (int64_t j = threadIdx.x; j < packs; j += kOnlineThreads) {
    float v[VEC];
    gb_load_floats<T, VEC>(xr + j * VEC, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = exp2f(fmaf(v[k], kLog2e, -m_log2)) * inv;
    gb_store_floats<T, VEC>(yr + j * VEC, v);
  }
}

template <typename T, int VEC>
cudaError_t launch_online(const void* x, void* y, int64_t rows, int64_t cols,
                          cudaStream_t stream) {
  softmax_online_kernel<T, VEC><<<static_cast<unsigned>(rows), kOnlineThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<T*>(y), cols);
  return cudaGetLastError();
}

// The grid's x dimension holds up to 2^31 - 1 blocks: one per row.
static bool rows_fit_grid(int64_t rows) { return rows <= 0x7fffffff; }

cudaError_t softmax_online_launch(const void* x, void* y, int64_t rows, int64_t cols, int dtype,
                                  cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (!rows_fit_grid(rows)) return cudaErrorInvalidConfiguration;
  GB_DISPATCH(dtype, scalar_t, { return launch_online<scalar_t, 1>(x, y, rows, cols, stream); });
}

// ------------------------------------------------------------------ block_reduce

constexpr int kMaxRegisterFloats = 32;  // of the row, per thread: 32 registers

// One block per row, the row in registers: thread t holds packs t, t + blockDim.x, ...
// (ITEMS of them, VEC elements each; each warp's loads cover 32 consecutive packs, 512
// contiguous bytes). All ITEMS loads are issued before any arithmetic, so each thread has
// up to 128 bytes in flight. Then max (reduction 1), exp and sum (reduction 2), and the
// stores straight from registers: x is read exactly once.
template <typename T, int VEC, int ITEMS>
__global__ void __launch_bounds__(1024)
    softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
  __shared__ float part_max[32], part_sum[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  const int packs = cols / VEC;
  float v[ITEMS][VEC];
  float m = -INFINITY;
  // -inf pads: exp(-inf - m) = 0, so they add nothing to the sum either.
  gb_load_row<T, VEC, ITEMS>(xr, packs, threadIdx.x, blockDim.x, -INFINITY, v);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) m = fmaxf(m, v[i][k]);
  }
  m = gb_block_reduce<true>(m, part_max);
  const float m_log2 = m * kLog2e;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      v[i][k] = exp2f(fmaf(v[i][k], kLog2e, -m_log2));
      s += v[i][k];
    }
  }
  const float inv = 1.0f / gb_block_reduce<false>(s, part_sum);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = threadIdx.x + i * blockDim.x;
    if (j < packs) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[i][k] *= inv;
      gb_store_floats<T, VEC>(yr + j * VEC, v[i]);
    }
  }
}

// Picks ITEMS (packs per thread) for a row of `packs` packs: the smallest, from
// gb_first_row_items (64 bytes of the row a thread) up, that needs at most 512 threads
// (several blocks then share an SM, so one block's loads overlap another's reductions),
// else 1024 threads with the most registers allowed. Returns false when the row does not
// fit in 1024 threads x 32 floats.
template <typename T, int VEC, int ITEMS = gb_first_row_items<T, VEC>()>
bool launch_block_registers(const void* x, void* y, int64_t rows, int64_t cols,
                            cudaStream_t stream, cudaError_t* err) {
  if constexpr (ITEMS * VEC > kMaxRegisterFloats) {
    return false;
  } else {
    const int64_t packs = cols / VEC;
    const int64_t threads_needed = (packs + ITEMS - 1) / ITEMS;
    constexpr bool kLargest = 2 * ITEMS * VEC > kMaxRegisterFloats;
    if (threads_needed <= 512 || (kLargest && threads_needed <= 1024)) {
      const int threads = static_cast<int>((threads_needed + 31) / 32 * 32);
      softmax_block_kernel<T, VEC, ITEMS><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), static_cast<int>(cols));
      *err = cudaGetLastError();
      return true;
    }
    return launch_block_registers<T, VEC, ITEMS * 2>(x, y, rows, cols, stream, err);
  }
}

template <typename T>
cudaError_t launch_block_reduce(const void* x, void* y, int64_t rows, int64_t cols,
                                cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);  // 16-byte packs: 4 floats or 8 halves
  // Vector loads need every row start 16-byte aligned: the base pointers and the row pitch.
  const bool aligned = cols % kVec == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(y) % 16 == 0;
  cudaError_t err = cudaSuccess;
  if (aligned ? launch_block_registers<T, kVec>(x, y, rows, cols, stream, &err)
              : launch_block_registers<T, 1>(x, y, rows, cols, stream, &err)) {
    return err;
  }
  // Rows too long for registers: two passes over the row, vectorized where aligned.
  return aligned ? launch_online<T, kVec>(x, y, rows, cols, stream)
                 : launch_online<T, 1>(x, y, rows, cols, stream);
}

cudaError_t softmax_block_reduce_launch(const void* x, void* y, int64_t rows, int64_t cols,
                                        int dtype, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (!rows_fit_grid(rows)) return cudaErrorInvalidConfiguration;
  GB_DISPATCH(dtype, scalar_t,
              { return launch_block_reduce<scalar_t>(x, y, rows, cols, stream); });
}

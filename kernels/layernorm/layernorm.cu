// layernorm.cu — y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * weight + bias over the last
// axis of a rows x cols row-major matrix (LayerNorm forward, biased variance, as torch).
//
// Napkin math per element: ~8 FLOPs (sum, subtract, square, sum, scale, multiply by
// weight, add bias); the fewest bytes are one read of x, one write of y and one read of
// weight and bias: (2 * rows * cols + 2 * cols) * sizeof(T). ~1 FLOP/byte in fp32:
// memory-bound, judged by GB/s against the copy bandwidth.
//
// layernorm_warp picks one of three kernels by row length:
//   cols <= 1024          one WARP per row, the row in registers (up to 32 floats a lane):
//                         both reductions (mean, then the variance of x - mean from the
//                         registers: two-pass, so no E[x^2] - E[x]^2 cancellation) are five
//                         shuffles each, with no shared memory and no __syncthreads;
//   cols <= 32768         one BLOCK per row, the row in registers, warp shuffles + a
//                         32-float shared-memory step per reduction (the fallback);
//   longer                one block per row, three passes over x (mean, variance, write),
//                         the re-reads served mostly by L2.
// 16-byte vector loads and stores wherever the row pitch and the pointers allow.
// Arithmetic is in fp32 whatever the storage type.
#include <cmath>
#include <cstdint>

#include <gpubench/rows.cuh>

// y = (v - mean) * rstd * w + b for one pack, written to yr at element `at`.
template <typename T, int VEC>
__device__ __forceinline__ void normalize_pack(float (&v)[VEC], const T* w, const T* b, T* yr,
                                               int64_t at, float mean, float rstd) {
  float wf[VEC], bf[VEC];
  gb_load_floats<T, VEC>(w + at, wf);
  gb_load_floats<T, VEC>(b + at, bf);
#pragma unroll
  for (int k = 0; k < VEC; ++k) v[k] = fmaf((v[k] - mean) * rstd, wf[k], bf[k]);
  gb_store_floats<T, VEC>(yr + at, v);
}

// ------------------------------------------------------------------ warp per row

constexpr int kWarpBlock = 256;  // 8 warps, 8 rows per block
constexpr int kMaxRegisterFloats = 32;

template <typename T, int VEC, int ITEMS>
__global__ void __launch_bounds__(kWarpBlock)
    layernorm_warp_kernel(const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ b, T* __restrict__ y, int64_t rows, int cols,
                          float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarpBlock / 32) + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp leaves together: the shuffles stay full-mask
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  const int packs = cols / VEC;
  float v[ITEMS][VEC];
  float s = 0.0f;
  gb_load_row<T, VEC, ITEMS>(xr, packs, lane, 32, 0.0f, v);  // 32 consecutive packs a warp
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) s += v[i][k];
  }
  const float mean = gb_warp_sum(s) / cols;
  float q = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (lane + i * 32 < packs) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) q = fmaf(v[i][k] - mean, v[i][k] - mean, q);
    }
  }
  const float rstd = rsqrtf(gb_warp_sum(q) / cols + eps);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = lane + i * 32;
    if (j < packs) {
      normalize_pack<T, VEC>(v[i], w, b, yr, static_cast<int64_t>(j) * VEC, mean, rstd);
    }
  }
}

// The smallest ITEMS (packs per lane) that covers the row; false when none fits in
// 32 floats a lane.
template <typename T, int VEC, int ITEMS = 1>
bool launch_warp(const void* x, const void* w, const void* b, void* y, int64_t rows, int64_t cols,
                 float eps, cudaStream_t stream, cudaError_t* err) {
  if constexpr (ITEMS * VEC > kMaxRegisterFloats) {
    return false;
  } else {
    if (cols / VEC > 32 * ITEMS) {
      return launch_warp<T, VEC, ITEMS * 2>(x, w, b, y, rows, cols, eps, stream, err);
    }
    const int64_t blocks = (rows + kWarpBlock / 32 - 1) / (kWarpBlock / 32);
    layernorm_warp_kernel<T, VEC, ITEMS><<<static_cast<unsigned>(blocks), kWarpBlock, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
        static_cast<T*>(y), rows, static_cast<int>(cols), eps);
    *err = cudaGetLastError();
    return true;
  }
}

// ------------------------------------------------------------------ block per row

template <typename T, int VEC, int ITEMS>
__global__ void __launch_bounds__(1024)
    layernorm_block_kernel(const T* __restrict__ x, const T* __restrict__ w,
                           const T* __restrict__ b, T* __restrict__ y, int cols, float eps) {
  __shared__ float part_mean[32], part_var[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  const int packs = cols / VEC;
  float v[ITEMS][VEC];
  float s = 0.0f;
  gb_load_row<T, VEC, ITEMS>(xr, packs, threadIdx.x, blockDim.x, 0.0f, v);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) s += v[i][k];
  }
  const float mean = gb_block_reduce<false>(s, part_mean) / cols;
  float q = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (threadIdx.x + i * blockDim.x < packs) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) q = fmaf(v[i][k] - mean, v[i][k] - mean, q);
    }
  }
  const float rstd = rsqrtf(gb_block_reduce<false>(q, part_var) / cols + eps);
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = threadIdx.x + i * blockDim.x;
    if (j < packs) {
      normalize_pack<T, VEC>(v[i], w, b, yr, static_cast<int64_t>(j) * VEC, mean, rstd);
    }
  }
}

// As softmax's block_reduce: the smallest ITEMS from gb_first_row_items up needing <= 512
// threads, else 1024 threads at the register limit; false when the row does not fit.
template <typename T, int VEC, int ITEMS = gb_first_row_items<T, VEC>()>
bool launch_block(const void* x, const void* w, const void* b, void* y, int64_t rows,
                  int64_t cols, float eps, cudaStream_t stream, cudaError_t* err) {
  if constexpr (ITEMS * VEC > kMaxRegisterFloats) {
    return false;
  } else {
    const int64_t threads_needed = (cols / VEC + ITEMS - 1) / ITEMS;
    constexpr bool kLargest = 2 * ITEMS * VEC > kMaxRegisterFloats;
    if (threads_needed <= 512 || (kLargest && threads_needed <= 1024)) {
      const int threads = static_cast<int>((threads_needed + 31) / 32 * 32);
      layernorm_block_kernel<T, VEC, ITEMS><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
          static_cast<T*>(y), static_cast<int>(cols), eps);
      *err = cudaGetLastError();
      return true;
    }
    return launch_block<T, VEC, ITEMS * 2>(x, w, b, y, rows, cols, eps, stream, err);
  }
}

// ------------------------------------------------------------------ rows too long

constexpr int kLoopThreads = 512;

template <typename T, int VEC>
__global__ void __launch_bounds__(kLoopThreads)
    layernorm_loop_kernel(const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ b, T* __restrict__ y, int64_t cols, float eps) {
  __shared__ float part_mean[32], part_var[32];
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t packs = cols / VEC;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < packs; j += kLoopThreads) {
    float v[VEC];
    gb_load_floats<T, VEC>(xr + j * VEC, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) s += v[k];
  }
  const float mean = gb_block_reduce<false>(s, part_mean) / cols;
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < packs; j += kLoopThreads) {
    float v[VEC];
    gb_load_floats<T, VEC>(xr + j * VEC, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) q = fmaf(v[k] - mean, v[k] - mean, q);
  }
  const float rstd = rsqrtf(gb_block_reduce<false>(q, part_var) / cols + eps);
  for (int64_t j = threadIdx.x; j < packs; j += kLoopThreads) {
    float v[VEC];
    gb_load_floats<T, VEC>(xr + j * VEC, v);
    normalize_pack<T, VEC>(v, w, b, yr, j * VEC, mean, rstd);
  }
}

template <typename T, int VEC>
cudaError_t launch_loop(const void* x, const void* w, const void* b, void* y, int64_t rows,
                        int64_t cols, float eps, cudaStream_t stream) {
  layernorm_loop_kernel<T, VEC><<<static_cast<unsigned>(rows), kLoopThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(b),
      static_cast<T*>(y), cols, eps);
  return cudaGetLastError();
}

// ------------------------------------------------------------------ the launcher

template <typename T, int VEC>
cudaError_t launch_layernorm(const void* x, const void* w, const void* b, void* y, int64_t rows,
                             int64_t cols, float eps, cudaStream_t stream) {
  cudaError_t err = cudaSuccess;
  if (cols <= 32 * kMaxRegisterFloats &&
      launch_warp<T, VEC>(x, w, b, y, rows, cols, eps, stream, &err)) {
    return err;
  }
  if (launch_block<T, VEC>(x, w, b, y, rows, cols, eps, stream, &err)) return err;
  return launch_loop<T, VEC>(x, w, b, y, rows, cols, eps, stream);
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

cudaError_t layernorm_warp_launch(const void* x, const void* w, const void* b, void* y,
                                  int64_t rows, int64_t cols, double eps, int dtype,
                                  cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;  // an empty grid is a launch error
  // One block per row (the fallbacks): the grid's x dimension holds 2^31 - 1 blocks.
  if (rows > 0x7fffffff || cols > 0x7fffffff) return cudaErrorInvalidConfiguration;
  const bool pointers_aligned = aligned16(x) && aligned16(w) && aligned16(b) && aligned16(y);
  GB_DISPATCH(dtype, scalar_t, {
    constexpr int kVec = 16 / sizeof(scalar_t);
    const float e = static_cast<float>(eps);
    return pointers_aligned && cols % kVec == 0
               ? launch_layernorm<scalar_t, kVec>(x, w, b, y, rows, cols, e, stream)
               : launch_layernorm<scalar_t, 1>(x, w, b, y, rows, cols, e, stream);
  });
}

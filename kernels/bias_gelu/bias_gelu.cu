// bias_gelu.cu — y = gelu(x + bias), x rows x cols row-major, bias of cols elements, with
// the tanh GELU (GPT-2's; torch's approximate="tanh"):
//   gelu(z) = z / 2 * (1 + tanh(sqrt(2 / pi) * (z + 0.044715 z^3)))
//           = z / (1 + exp(-2 sqrt(2 / pi) * (z + 0.044715 z^3)))      [1 + tanh u = 2 sigmoid 2u]
// computed as the second line: 5 FP32 instructions and two special-function ones (ex2,
// rcp) an element. The exact erf GELU costs ~28 instructions (CUDA's erff is a selected
// pair of polynomials), which in 16-bit on an H200 (1.07e12 elements/s at copy bandwidth)
// would make the fused kernel compute-bound; the tanh form keeps it memory-bound.
//
// A fusion lesson. Napkin math for n = rows * cols elements of sizeof(T) bytes:
//   unfused: bias_add reads x and writes z, then gelu reads z and writes y:
//            4 * n * sizeof(T) bytes (+ bias), two kernel launches;
//   fused:   one kernel reads x and writes y: 2 * n * sizeof(T) (+ bias).
// Both are memory-bound (~8 FLOPs an element against 8 bytes in fp32, 4 in 16-bit), so
// fused should take ~half the time: the issue's target is >= 1.8x at sizes
// far past L2 (where unfused's intermediate cannot stay in cache). On an H200 at 4.28 TB/s,
// 8192 x 16384 fp32 (537 MB a tensor): fused ~0.25 ms, unfused ~0.50 ms.
//
// Both use the same row kernel: a 2-D grid whose x covers a row's 16-byte packs and whose
// y walks rows, so each thread loads its bias pack once and reuses it for every row it
// visits (8 on average), with 4 rows' loads in flight before any arithmetic.
// Arithmetic is in fp32 whatever the storage type.
#include <cmath>
#include <cstdint>

#include <gpubench/rows.cuh>

// exp(-2u) = exp2(-z * (A + B z^2)), A = 2 sqrt(2/pi) log2(e), B = 0.044715 A.
__device__ __forceinline__ float gelu(float z) {
  constexpr float kA = 2.302208198144325f, kB = 0.1029432395800235f;
  const float e = exp2f(-z * fmaf(kB, z * z, kA));
  return __fdividef(z, 1.0f + e);  // e = inf (z << 0): z / inf = -0, gelu's limit
}

constexpr int kThreads = 256;
constexpr int kUnroll = 4;          // rows whose loads are in flight together
constexpr int kRowsPerThread = 8;   // rows a thread visits on average: bias reuse

// y[r, c] = f(x[r, c] + bias[c]) with f = gelu (fused) or the identity (unfused's first
// kernel). Thread (x: pack p of the row, y: row lane) walks rows r, r + stride, ...
template <typename T, int VEC, bool kGelu>
__global__ void __launch_bounds__(kThreads)
    bias_rows_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                     int64_t rows, int64_t cols) {
  const int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= cols / VEC) return;
  const int64_t at = p * VEC;
  float b[VEC];
  gb_load_floats<T, VEC>(bias + at, b);
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  for (; r + (kUnroll - 1) * stride < rows; r += kUnroll * stride) {
    float v[kUnroll][VEC];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) gb_load_floats<T, VEC>(x + (r + u * stride) * cols + at, v[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[u][k] = kGelu ? gelu(v[u][k] + b[k]) : v[u][k] + b[k];
      gb_store_floats<T, VEC>(y + (r + u * stride) * cols + at, v[u]);
    }
  }
  for (; r < rows; r += stride) {
    float v[VEC];
    gb_load_floats<T, VEC>(x + r * cols + at, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = kGelu ? gelu(v[k] + b[k]) : v[k] + b[k];
    gb_store_floats<T, VEC>(y + r * cols + at, v);
  }
}

// Unfused's second kernel: y = gelu(y) in place over n elements, a plain elementwise
// kernel (grid-stride over 16-byte packs; VEC divides n).
template <typename T, int VEC>
__global__ void __launch_bounds__(kThreads) gelu_inplace_kernel(T* __restrict__ y, int64_t n) {
  const int64_t packs = n / VEC;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < packs;
       i += step) {
    float v[VEC];
    gb_load_floats<T, VEC>(y + i * VEC, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] = gelu(v[k]);
    gb_store_floats<T, VEC>(y + i * VEC, v);
  }
}

template <typename T, int VEC, bool kGelu>
cudaError_t launch_rows(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  // Short rows would leave most of a 256-thread row idle: the block is 2-D, tx threads
  // along the row (a multiple of 32) and 256 / tx rows.
  const int64_t packs = cols / VEC;
  const int tx = static_cast<int>(packs >= kThreads ? kThreads : (packs + 31) / 32 * 32);
  const int ty = kThreads / tx;
  const int64_t row_lanes = (rows + ty - 1) / ty;
  const int64_t grid_y = (row_lanes + kRowsPerThread - 1) / kRowsPerThread;
  const dim3 grid(static_cast<unsigned>((packs + tx - 1) / tx),
                  static_cast<unsigned>(grid_y < 65535 ? grid_y : 65535));
  bias_rows_kernel<T, VEC, kGelu><<<grid, dim3(tx, ty), 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<T*>(y), rows, cols);
  return cudaGetLastError();
}

template <typename T, int VEC>
cudaError_t launch_gelu_inplace(void* y, int64_t n, cudaStream_t stream) {
  const int64_t blocks = (n / VEC + kThreads - 1) / kThreads;
  gelu_inplace_kernel<T, VEC><<<static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20)),
                                kThreads, 0, stream>>>(static_cast<T*>(y), n);
  return cudaGetLastError();
}

template <typename T, int VEC>
cudaError_t launch_unfused(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                           cudaStream_t stream) {
  // The intermediate z = x + bias goes to memory (into y, which gelu then rewrites in
  // place): the same traffic as a separate buffer, without an allocation in the timing.
  const cudaError_t err = launch_rows<T, VEC, false>(x, bias, y, rows, cols, stream);
  if (err != cudaSuccess) return err;
  return launch_gelu_inplace<T, VEC>(y, rows * cols, stream);
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// grid.x = packs / tx must fit (2^31 - 1): any row of under ~2^38 elements does.
#define BIAS_GELU_LAUNCH(LAUNCHER)                                                             \
  if (rows == 0 || cols == 0) return cudaSuccess;                                             \
  const bool aligned = aligned16(x) && aligned16(bias) && aligned16(y);                       \
  GB_DISPATCH(dtype, scalar_t, {                                                               \
    constexpr int kVec = 16 / sizeof(scalar_t);                                               \
    return aligned && cols % kVec == 0 ? LAUNCHER<scalar_t, kVec>(x, bias, y, rows, cols, stream) \
                                       : LAUNCHER<scalar_t, 1>(x, bias, y, rows, cols, stream);   \
  });

template <typename T, int VEC>
cudaError_t launch_fused(const void* x, const void* bias, void* y, int64_t rows, int64_t cols,
                         cudaStream_t stream) {
  return launch_rows<T, VEC, true>(x, bias, y, rows, cols, stream);
}

cudaError_t bias_gelu_fused_launch(const void* x, const void* bias, void* y, int64_t rows,
                                   int64_t cols, int dtype, cudaStream_t stream) {
  BIAS_GELU_LAUNCH(launch_fused)
}

cudaError_t bias_gelu_unfused_launch(const void* x, const void* bias, void* y, int64_t rows,
                                     int64_t cols, int dtype, cudaStream_t stream) {
  BIAS_GELU_LAUNCH(launch_unfused)
}

// vector_add.cu — out[i] = a[i] + b[i].
//
// Napkin math per element: 1 FLOP, two reads and one write of sizeof(T) bytes,
// 3 * n * sizeof(T) in all: 1/12 FLOP/byte in fp32, memory-bound on any GPU.
//
// Two kernels: `vector_add_kernel`, one element per thread, and `vector_add_vec_kernel`,
// 16 bytes (a float4: 4 fp32 or 8 fp16/bf16 elements) per thread and operand.
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

// ----------------------------------------------------------------------------------------
// vectorized: one 16-byte load of a, one of b and one 16-byte store per thread.
//
// The scalar kernel moves 4 bytes (fp32) or 2 (fp16/bf16) per load instruction; a warp's
// 128 or 64 bytes fill one or half a cache line per instruction, and the LSU and address
// math, not DRAM, end up in the way. With LDG.128/STG.128 a warp moves 512 bytes per
// instruction, 4x (8x for 16-bit types) fewer memory instructions and threads for the
// same bytes. At 2^24 fp32 elements (192 MiB of traffic) an H200 at ~4.3 TB/s copy rate
// needs ~47 us: the target is >= 90% of copy bandwidth there. At 2^20 the 12 MiB sit in
// L2 and launch/tail overheads (~3 us) weigh.
//
// Misalignment: the vector path needs a, b and out 16-byte aligned (torch allocations
// are; a view at an odd offset may not be) and the launcher falls back to the scalar
// kernel otherwise. n need not be a multiple of the vector: the last n % kVec elements,
// the tail, are done by the first threads of the grid, one element each.
template <typename T>
__global__ void __launch_bounds__(256)
    vector_add_vec_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                          int64_t n) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t vectors = n / kVec;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < vectors) {
    const uint4 va = reinterpret_cast<const uint4*>(a)[i];
    const uint4 vb = reinterpret_cast<const uint4*>(b)[i];
    uint4 vo;
    const T* ea = reinterpret_cast<const T*>(&va);
    const T* eb = reinterpret_cast<const T*>(&vb);
    T* eo = reinterpret_cast<T*>(&vo);
#pragma unroll
    for (int j = 0; j < kVec; ++j) eo[j] = gb_from_float<T>(gb_to_float(ea[j]) + gb_to_float(eb[j]));
    reinterpret_cast<uint4*>(out)[i] = vo;
  }
  const int64_t tail = vectors * kVec + i;  // i < kVec: the elements after the last vector
  if (i < kVec && tail < n) out[tail] = gb_from_float<T>(gb_to_float(a[tail]) + gb_to_float(b[tail]));
}

cudaError_t vector_add_vectorized_launch(const void* a, const void* b, void* out, int64_t n,
                                         int dtype, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const auto bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                    reinterpret_cast<uintptr_t>(out);
  if (bits % 16 != 0) return vector_add_launch(a, b, out, n, dtype, stream);  // misaligned
  constexpr int kThreads = 256;
  GB_DISPATCH(dtype, scalar_t, {
    constexpr int kVec = 16 / sizeof(scalar_t);
    // One thread per vector; at least kVec threads, so the tail always has its threads.
    const int64_t threads = n / kVec > kVec ? n / kVec : kVec;
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    vector_add_vec_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const scalar_t*>(a), static_cast<const scalar_t*>(b),
        static_cast<scalar_t*>(out), n);
  });
  return cudaGetLastError();
}

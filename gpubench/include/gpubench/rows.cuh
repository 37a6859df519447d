// gpubench/rows.cuh — what row-wise kernels (softmax, layernorm, bias+GELU) share:
// packed 16-byte loads and stores converted to fp32, and warp/block reductions.
//
//   float v[VEC]; gb_load_floats<scalar_t, VEC>(p, v);   // VEC * sizeof(T) <= 16 bytes
//   float total = gb_block_reduce<false>(v[0], partials); // partials: __shared__ float[32]
#pragma once

#include <cmath>

#include "dispatch.cuh"

// VEC elements of T in one 16-byte (or smaller) memory transaction: the pointer must be
// aligned to sizeof(T) * VEC.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) GbPack {
  T v[VEC];
};

template <typename T, int VEC>
__device__ __forceinline__ void gb_load_floats(const T* p, float (&out)[VEC]) {
  const GbPack<T, VEC> pack = *reinterpret_cast<const GbPack<T, VEC>*>(p);
#pragma unroll
  for (int k = 0; k < VEC; ++k) out[k] = gb_to_float(pack.v[k]);
}

template <typename T, int VEC>
__device__ __forceinline__ void gb_store_floats(T* p, const float (&in)[VEC]) {
  GbPack<T, VEC> pack;
#pragma unroll
  for (int k = 0; k < VEC; ++k) pack.v[k] = gb_from_float<T>(in[k]);
  *reinterpret_cast<GbPack<T, VEC>*>(p) = pack;
}

// The fewest packs each thread of a row-in-registers block kernel loads before its first
// reduction (ITEMS for gb_load_row): enough for kGbRowBytesPerThread bytes of the row.
// Why not one 16-byte pack: such a block loads once, then only reduces and stores, so an
// SM streams from DRAM only while some of its blocks are in their load phase. Fewer,
// fuller threads per row make smaller blocks, so more rows (blocks) share an SM and their
// phases overlap: a 16-bit row of 4096 is 512 threads x 16 B (4 blocks an SM) at 16 B a
// thread, 128 threads x 64 B (16 blocks an SM) at 64 B. 64 B = 32 fp16 or 16 fp32 values,
// within the 32-float register budget of the kernels. Measured on the H200 with gpubench
// compare (docs/ladder.md, 2026-11-23): layernorm fp16 8192 x 4096 41.9 us at 16 B, 35.3 us
// at 32 B, 33.4 us at 64 B (Triton: 32.5 us); softmax fp16 4096 x 4096 21.0 -> 17.0 us;
// fp32 rows of 4096 and 8192, which already had 32-64 B a thread, did not move.
constexpr int kGbRowBytesPerThread = 64;

template <typename T, int VEC>
constexpr int gb_first_row_items() {
  constexpr int kItems = kGbRowBytesPerThread / static_cast<int>(VEC * sizeof(T));
  return kItems > 1 ? kItems : 1;
}

// A row's packs into registers, ITEMS per thread: the thread's i-th pack is number
// first + i * step (step = the threads sharing the row, so that consecutive threads load
// consecutive packs: coalesced); packs past the row's end read as `pad`, the reduction's
// identity (0 for a sum, -inf for a max), so that every thread reduces ITEMS full packs.
template <typename T, int VEC, int ITEMS>
__device__ __forceinline__ void gb_load_row(const T* row, int packs, int first, int step,
                                            float pad, float (&v)[ITEMS][VEC]) {
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = first + i * step;
    if (j < packs) {
      gb_load_floats<T, VEC>(row + j * VEC, v[i]);
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k) v[i][k] = pad;
    }
  }
}

// Butterfly reductions over the 32 lanes of a warp: log2(32) = 5 shuffles, the result in
// every lane.
__device__ __forceinline__ float gb_warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(~0u, v, offset));
  return v;
}

__device__ __forceinline__ float gb_warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(~0u, v, offset);
  return v;
}

// Block-wide max/sum, the result in every thread: each warp reduces its 32 values with
// shuffles, lane 0 parks the warp's value in shared memory, one barrier, then every warp
// reduces the (at most 32) partials itself, so no second barrier is needed to broadcast.
// `partials` must not be reused by a later reduction without a barrier: callers give each
// reduction its own array. blockDim.x must be a multiple of 32.
template <bool kMax>
__device__ __forceinline__ float gb_block_reduce(float v, float* partials) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = kMax ? gb_warp_max(v) : gb_warp_sum(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  v = lane < warps ? partials[lane] : (kMax ? -INFINITY : 0.0f);
  return kMax ? gb_warp_max(v) : gb_warp_sum(v);
}

"""matmul in Triton: the tiled kernel of the Triton tutorial, one output tile per program.

C[M, N] = A[M, K] @ B[K, N]. Each program computes a BLOCK_M x BLOCK_N tile of C,
walking K in BLOCK_K steps with tl.dot (tensor cores for fp16/bf16; fp32 inputs
use input_precision="ieee", true fp32 rather than TF32, so the check holds it to
fp32 tolerances). Loads and the store are masked, so M, N and K need not be
multiples of the tile; strides are passed, so any 2-D layout works.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  IEEE: tl.constexpr):
    # int64 row/column indices: rows * stride_am passes 2^31 once a matrix has
    # more than 2^31 elements, which int32 offsets would wrap.
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # Out-of-range elements load as 0 so ragged edges add nothing to the dot.
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K - k0), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < K - k0) & (cols[None, :] < N), other=0.0)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn,
             acc.to(c_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a, b, out):
    m, k = a.shape
    n = b.shape[1]
    ieee = a.dtype == torch.float32
    # 128 x 128 tiles with 32-deep K steps for 16-bit inputs (64 KiB of staged
    # operands over 3 stages); fp32 "ieee" runs on CUDA cores, where smaller
    # 64 x 64 tiles keep register pressure down.
    bm, bn, bk, warps, stages = (64, 64, 32, 4, 3) if ieee else (128, 128, 32, 8, 3)
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    matmul_kernel[grid](a, b, out, m, n, k,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1),
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, IEEE=ieee,
                        num_warps=warps, num_stages=stages)

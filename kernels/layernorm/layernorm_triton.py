"""layernorm in Triton: one row per program.

A row of up to MAX_FUSED elements is loaded into registers once; the mean, then the
variance of x - mean (two-pass, from registers), then (x - mean) * rstd * weight + bias
are computed in fp32 and stored: one read of x and one write of y, the napkin-math
minimum. Longer rows loop over the row in MAX_FUSED chunks three times (mean, variance,
write), as the Triton tutorial's kernel does for every row length.
"""

import triton
import triton.language as tl

# 16K elements a program: 64 KiB of fp32 across 16 warps, 32 values a thread.
MAX_FUSED = 16384


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, cols, x_row_stride, y_row_stride, eps,
                     BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    # int64 row: row * stride passes 2^31 once the matrix has 2^31 elements.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    offsets = tl.arange(0, BLOCK)
    if ONE_BLOCK:
        mask = offsets < cols
        x = tl.load(x_row + offsets, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / cols
        centered = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / cols + eps)
        w = tl.load(w_ptr + offsets, mask=mask).to(tl.float32)
        b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
        y = centered * rstd * w + b
        tl.store(y_row + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            x = tl.load(x_row + start + offsets, mask=start + offsets < cols, other=0.0)
            acc += x.to(tl.float32)
        mean = tl.sum(acc, axis=0) / cols
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=0.0).to(tl.float32)
            centered = tl.where(mask, x - mean, 0.0)
            acc += centered * centered
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
        for start in range(0, cols, BLOCK):
            mask = start + offsets < cols
            x = tl.load(x_row + start + offsets, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + offsets, mask=mask).to(tl.float32)
            b = tl.load(b_ptr + start + offsets, mask=mask).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_row + start + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def layernorm(x, weight, bias, eps, out):
    rows, cols = x.shape
    block = min(triton.next_power_of_2(cols), MAX_FUSED)
    # About 8-16 values a thread: 4 warps for short rows up to 16 for 16K-element blocks.
    num_warps = min(max(block // 512, 4), 16)
    layernorm_kernel[(rows,)](x, weight, bias, out, cols, x.stride(0), out.stride(0), eps,
                              BLOCK=block, ONE_BLOCK=block >= cols, num_warps=num_warps)

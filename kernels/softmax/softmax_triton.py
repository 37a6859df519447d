"""softmax in Triton: fused, one row per program (the Triton tutorial's kernel).

Each program loads a whole row into registers once (masked lanes read -inf, so
they add exp(-inf) = 0 to the sum), takes its max, exp, sum and divide in fp32,
and stores the row: one read and one write per element, the napkin-math minimum.
"""

import triton
import triton.language as tl

# Triton caps a block at 2^20 elements (TRITON_MAX_TENSOR_NUMEL); one row must
# fit in one block here. Rows past ~32K elements already spill registers and
# slow down (a looping, online-softmax kernel would be the fix), but still run.
MAX_COLS = 2**20

# Bytes of the row each thread holds: the rule of the CUDA row kernels
# (kGbRowBytesPerThread in gpubench/include/gpubench/rows.cuh, where the napkin
# math and the H200 A/B are): fewer, fuller threads per row make smaller
# programs, so more rows share an SM and one row's loads overlap another's
# reductions. The Triton tutorial's fixed table (16 warps from BLOCK = 4096 on)
# gave a 16-bit row of 4096 16 bytes a thread: 76% of copy bandwidth on the H200.
ROW_BYTES_PER_THREAD = 64
# 4 warps at least, as the tutorial (short rows); 16 at most (512 threads).
MIN_WARPS, MAX_WARPS = 4, 16


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    # int64 row: row * stride passes 2^31 once the matrix has 2^31 elements.
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * x_row_stride + offsets, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    # Subtracting the max keeps exp <= 1: no overflow, whatever the logits.
    numerator = tl.exp(x - tl.max(x, axis=0))
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x, out):
    rows, cols = x.shape
    if cols > MAX_COLS:
        raise ValueError(f"softmax_triton holds a row in one block: cols={cols} > {MAX_COLS}")
    block = triton.next_power_of_2(cols)
    num_warps = warps_for_row(block, x.element_size())
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block,
                            num_warps=num_warps)


def warps_for_row(block: int, element_size: int) -> int:
    """Warps for one program holding a row of `block` elements: ROW_BYTES_PER_THREAD a
    thread, within [MIN_WARPS, MAX_WARPS] (a power of two, since block is)."""
    threads = block * element_size // ROW_BYTES_PER_THREAD
    return min(max(threads // 32, MIN_WARPS), MAX_WARPS)

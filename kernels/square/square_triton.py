"""square in Triton: one program squares a block of BLOCK contiguous elements."""

import triton
import triton.language as tl

# 1024 elements x 4 bytes = 4 KiB per program: wide enough for 16-byte vector
# loads across 4 warps, small enough to leave many programs per SM.
BLOCK = 1024


@triton.jit
def square_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * x, mask=mask)


def square(x, out):
    n = x.numel()
    square_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)

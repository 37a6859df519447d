"""A copy kernel that stores 2^40 elements past its output: an illegal address on the GPU."""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    far = offsets.to(tl.int64) + (1 << 40)
    tl.store(y_ptr + far, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def copy(x, out):
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)

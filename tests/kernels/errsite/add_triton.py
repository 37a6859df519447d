"""y = x + 1 in Triton, broken: a block of BLOCK elements plus one of 2 * BLOCK."""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = x + tl.arange(0, 2 * BLOCK)  # the line errors point at: 256 and 512 do not broadcast
    tl.store(y_ptr + offsets, y, mask=mask)


def add_one(x, out):
    add_kernel[(triton.cdiv(x.numel(), BLOCK),)](x, out, x.numel(), BLOCK=BLOCK)

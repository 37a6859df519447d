"""vector_add in Triton: one program adds a block of BLOCK contiguous elements."""

import triton
import triton.language as tl

BLOCK = 1024  # 4 KiB of each operand per program in fp32; see square_triton.py


@triton.jit
def vector_add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a + b, mask=mask)


def vector_add(a, b, out):
    n = a.numel()
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)

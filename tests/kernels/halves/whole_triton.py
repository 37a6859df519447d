"""Two autotune configs of y = 2x, both right: block sizes 128 and 256."""

import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=1),
                          triton.Config({"BLOCK": 256}, num_warps=2)],
                 key=["n"])
@triton.jit
def whole_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * 2, mask=mask)


def doubled(x, out):
    n = x.numel()
    whole_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)

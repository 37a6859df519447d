"""Two autotune configs, each writing only its half of y = 2x (a broken space on purpose)."""

import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"HALF": 0, "BLOCK": 256}, num_warps=1),
                          triton.Config({"HALF": 1, "BLOCK": 256}, num_warps=1)],
                 key=["n"])
@triton.jit
def split_kernel(x_ptr, y_ptr, n, HALF: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if HALF == 0:  # noqa: SIM108  (a constexpr branch: one compiled kernel per half)
        mine = offsets < n // 2
    else:
        mine = offsets >= n // 2
    mask = (offsets < n) & mine
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(y_ptr + offsets, x * 2, mask=mask)


def doubled(x, out):
    n = x.numel()
    split_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)

"""gpubench's own Triton kernel, launched once by a GPU worker before its first task
(prewarm/__init__.py says why): adds one to 128 floats."""

import torch
import triton
import triton.language as tl

BLOCK = 128  # one small block: the launch is what is warmed, not the GPU


@triton.jit
def _add_one(x, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x + offsets, tl.load(x + offsets) + 1)


def launch_once() -> None:
    values = torch.zeros(BLOCK, device="cuda")
    _add_one[(1,)](values, BLOCK=BLOCK)
    torch.cuda.synchronize()

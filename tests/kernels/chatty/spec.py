"""A well-behaved two-axis family whose spec prints on stdout when imported and when it makes
inputs: `gpubench run ... --json` must still print nothing but JSON on stdout."""

import sys

import torch

from gpubench import Axis, Family, TorchVariant

print("chatty: hello from spec.py")  # the point of this family
sys.stdout.flush()


def make_inputs(shape, dtype, device):
    print(f"chatty: making {shape['rows']}x{shape['cols']}")
    return (torch.randn(shape["rows"], shape["cols"], device=device).to(dtype),)


family = Family(
    axes=(Axis("rows", default=8), Axis("cols", default=16)),
    shapes=({"rows": 8, "cols": 16},),
    make_inputs=make_inputs,
    reference=lambda x: x * 2,
    flops=lambda s: s["rows"] * s["cols"],
    bytes_moved=lambda s, itemsize: 2 * s["rows"] * s["cols"] * itemsize,
    variants=(TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),),
)

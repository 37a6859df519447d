"""y = 2x over one axis `n`: the small family the hostile test families (hostile/, tamper/,
unhealthy/) build their variants on. Not a family folder itself (no spec.py): each of
them loads it with import_kernel_file. Napkin math: n FLOPs; one read, one write."""

import torch

from gpubench import Axis, Family


def make_inputs(shape, dtype, device):
    return (torch.randn(shape["n"], device=device).to(dtype),)


def doubling_family(n: int, variants: tuple) -> Family:
    return Family(
        axes=(Axis("n", default=n),),
        shapes=({"n": n},),
        make_inputs=make_inputs,
        reference=lambda x: 2 * x,
        flops=lambda s: s["n"],
        bytes_moved=lambda s, itemsize: 2 * s["n"] * itemsize,
        variants=variants,
    )

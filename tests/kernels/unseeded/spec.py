"""unseeded: inputs drawn from a generator gpubench does not seed (a torch.Generator seeded
from the wall clock), so the same seed gives other values each time. The check draws a
point's inputs again from their seed after a variant's calls, so this family is an ERROR
that says how to draw them, not a FAIL of every variant ("mutated its input")."""

import time

import torch

from gpubench import Family, TorchVariant


def make_inputs(n, dtype, device):
    generator = torch.Generator(device=device)
    generator.manual_seed(time.perf_counter_ns())
    return (torch.randn(n, device=device, generator=generator).to(dtype),)


family = Family(
    reference=lambda x: x * x,
    make_inputs=make_inputs,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(4096,), cpu_sizes=(4096,),
    variants=(TorchVariant("torch", fn=lambda x, out: torch.mul(x, x, out=out),
                           baseline=True),),
)

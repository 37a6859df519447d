"""sanitize_demo: y = 2 * x by three CUDA kernels with one bug each, and a clean one.

A kernels folder for `gpubench sanitize` (the docs' example and its GPU test):

    gpubench sanitize sanitize_demo --kernels-dir examples --tool all

- oob:    writes y[n], one element past the end (memcheck: out-of-bounds write)
- race:   reads a neighbour's shared-memory slot without __syncthreads (racecheck)
- uninit: reads a scratch buffer nothing ever wrote (initcheck)
- clean:  the same work done right: every tool finds nothing

Napkin math: n FLOPs; one read and one write of 4 bytes per element.
"""

import torch

from gpubench import CudaVariant, Family, TorchVariant


def make_inputs(n, dtype, device):
    return (torch.randn(n, device=device, dtype=dtype),)


def cuda(name: str, about: str) -> CudaVariant:
    return CudaVariant(name, function=name, cuda=("buggy.cu",), cpp=("buggy_binding.cpp",),
                       description=about)


family = Family(
    reference=lambda x: 2 * x,
    make_inputs=make_inputs,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    dtypes=("float32",),
    sizes=(1 << 16,),  # 64 Ki floats: instant even under memcheck's ~100x slowdown
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True,
                     description="torch.mul"),
        cuda("oob", "writes one element past the end"),
        cuda("race", "shared-memory read without __syncthreads"),
        cuda("uninit", "reads a buffer never written"),
        cuda("clean", "correct: one thread per element"),
    ),
)

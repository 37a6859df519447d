"""make_inputs breaks its contract: float64 under a float32 label (a second draw gives a
list, not a tensor). The error must say what a spec has to return."""

import torch

from gpubench import Family, TorchVariant

family = Family(
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=torch.float64),),
    reference=lambda x: 2 * x,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(64,),
    variants=(TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),),
)

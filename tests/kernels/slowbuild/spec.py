"""A C++ variant whose build --build-timeout stops long before it ends (torch's headers
alone take 20-40 s to compile): the compiler processes must die with the timeout."""

import torch

from gpubench import CudaVariant, Family, TorchVariant

family = Family(
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device).to(dtype),),
    reference=lambda x: x + 1,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(64,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.add(x, 1, out=out), baseline=True),
        CudaVariant("slow", function="add_one", cpu=("slow.cpp",)),
    ),
)

"""badcpp: y = x + 1 where the C++ variant does not compile.

Napkin math: n FLOPs; 2 * n * itemsize bytes.
"""

import torch

from gpubench import CudaVariant, Family, TorchVariant

family = Family(
    reference=lambda x: x + 1,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1024,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.add(x, 1, out=out), baseline=True),
        CudaVariant("broken", function="add_one", cuda=("add_one.cu",), cpp=("add_one.cpp",),
                    cpu=("add_one.cpp",)),
    ),
)

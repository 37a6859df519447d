"""oddpath: y = 2 * x + 1, a CPU C++ family that the tests copy into a folder whose path
holds a space, a `$` and a quote (`my kernels/it's$odd "x"`) to prove such folders build.

Napkin math: 2 * n FLOPs; 2 * n * itemsize bytes.
"""

import torch

from gpubench import CudaVariant, Family, TorchVariant

family = Family(
    reference=lambda x: 2 * x + 1,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: 2 * n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    dtypes=("float32",),
    sizes=(1024,),
    cpu_sizes=(1024,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.add(x, x, out=out).add_(1), baseline=True),
        # cpu only: the header include is what needs the family folder on the -I path.
        CudaVariant("cpp", function="twice_plus_one", cpu=("oddpath_cpu.cpp",)),
    ),
)

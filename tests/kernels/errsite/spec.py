"""errsite: y = x + 1, with variants that fail at a known line of this folder's files, for
errors shown at their file:line (records/error_site.py): a helper that raises, a Triton
kernel whose shapes do not broadcast (an error of the Triton interpreter on the CPU).

Napkin math: n FLOPs; 2 * n * itemsize bytes.
"""

from pathlib import Path

import torch

from gpubench import Family, TorchVariant, TritonVariant
from gpubench.families.discovery import import_kernel_file

helpers = import_kernel_file(Path(__file__).parent / "helpers.py", "errsite_helpers")

family = Family(
    reference=lambda x: x + 1,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(256,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.add(x, 1, out=out), baseline=True),
        TorchVariant("helper", fn=helpers.add_one),
        TritonVariant("triton", module="add_triton.py", function="add_one"),
    ),
)

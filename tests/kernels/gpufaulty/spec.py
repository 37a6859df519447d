"""gpufaulty: y = x, with a Triton variant that writes far out of bounds (GPU only).

Napkin math: 0 FLOPs; 2 * n * itemsize bytes.
"""

import torch

from gpubench import Family, TorchVariant, TritonVariant

family = Family(
    reference=lambda x: x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: 0,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1 << 16,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: out.copy_(x), baseline=True),
        TritonVariant("illegal", module="illegal_triton.py", function="copy"),
        TorchVariant("after_fault", fn=lambda x, out: torch.add(x, 0, out=out)),
    ),
)

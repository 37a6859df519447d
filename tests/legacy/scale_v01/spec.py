"""scale: y = 3 * x, written as families were before 0.2.0 (`from gpubench.spec import`).

Kept as written then: it must run unchanged, with a deprecation warning at line 8.
"""

import torch

from gpubench.spec import Axis, Family, TorchVariant

family = Family(
    axes=(Axis("n", "elements", default=2**12, cpu_default=2**12),),
    reference=lambda x: 3 * x,
    make_inputs=lambda s, dtype, device: (torch.randn(s["n"], device=device).to(dtype),),
    flops=lambda s: s["n"],
    bytes_moved=lambda s, itemsize: 2 * s["n"] * itemsize,
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 3, out=out), baseline=True),
        TorchVariant("twice", fn=lambda x, out: torch.add(x, 2 * x, out=out)),
    ),
)

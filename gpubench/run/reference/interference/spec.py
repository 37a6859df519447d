"""The interference reference: torch.matmul at two sizes that stress what devices share.

- 8192^3 in bf16 (GPU): 1.1 TFLOP, ~1.6 ms at ~700 TFLOP/s on an H200, at full
  power: shows a shared power budget or cooling (a GPU beside a busy one
  running at lower clocks).
- 256^3: 34 MFLOP, a few us on a GPU: launch-bound, so it times the host CPU
  that launches it: shows contention for host cores between workers.
On a CPU worker (no GPU) both shapes are small fp32 matmuls on the worker's
threads: they show workers competing for cores and memory bandwidth.
"""

import torch

from gpubench.families.spec import Axis, Family, TorchVariant


def make_inputs(shape, dtype, device):
    n = shape["N"]
    a = (torch.randn(n, n, device=device) * n**-0.5).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    return a, b


family = Family(
    axes=(Axis("N", "M = N = K of the matmul", default=8192, cpu_default=256),),
    fill=lambda n: {"N": n},
    shapes=({"N": 8192}, {"N": 256}),
    # 256^3 is ~1 ms on one core; 64^3 (~20 us) is launch- and dispatch-bound like 256^3
    # on a GPU.
    cpu_shapes=({"N": 256}, {"N": 64}),
    make_inputs=make_inputs,
    flops=lambda s: 2 * s["N"] ** 3,
    bytes_moved=lambda s, itemsize: 3 * s["N"] ** 2 * itemsize,
    reference=lambda a, b: a @ b,
    dtypes=("bfloat16", "float32"),
    variants=(TorchVariant("matmul", fn=lambda a, b, out: torch.matmul(a, b, out=out),
                           baseline=True, description="torch.matmul"),),
    description="gpubench's interference reference",
)

"""matmul_tune: C = A @ B in fp16/bf16, for `gpubench tune`'s example and GPU acceptance.

The Triton variant is kernels/matmul's tensor-core kernel over an 18-config autotune
space (matmul_tune_triton.py): `gpubench tune matmul_tune --variant triton_tune
--kernels-dir examples/tune` checks every config alone and races them. A family of its
own, so `gpubench run matmul` does not pay for 18 compiles on its first call.
Napkin math as kernels/matmul: 2*M*N*K FLOPs, (MK + KN + MN) * itemsize bytes; 4096^3 in
fp16 is 137 GFLOP, ~0.14 ms at the H200's ~990 TFLOP/s dense peak.
"""

import torch

from gpubench import Axis, Family, TorchVariant, TritonVariant


def make_inputs(shape, dtype, device):
    m, n, k = shape["M"], shape["N"], shape["K"]
    # A scaled by K^-1/2: each C element ~N(0, 1) at any K (kernels/matmul/spec.py).
    a = (torch.randn(m, k, device=device, dtype=torch.float32) * k**-0.5).to(dtype)
    b = torch.randn(k, n, device=device, dtype=torch.float32).to(dtype)
    return a, b


family = Family(
    axes=(Axis("M", "rows of A and C", default=4096, cpu_default=64),
          Axis("N", "columns of B and C", default=4096, cpu_default=64),
          Axis("K", "inner dimension", default=4096, cpu_default=64)),
    fill=lambda n: {"M": n, "N": n, "K": n},
    make_inputs=make_inputs,
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    bytes_moved=lambda s, itemsize: (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"])
    * itemsize,
    reference=lambda a, b: a @ b,
    dtypes=("float16", "bfloat16"),
    variants=(
        TorchVariant("torch", fn=lambda a, b, out: torch.matmul(a, b, out=out), baseline=True,
                     description="torch.matmul (cuBLAS)"),
        TritonVariant("triton_tune", module="matmul_tune_triton.py", function="matmul_tune",
                      description="tensor cores: kernels/matmul's triton_tc kernel over 18 "
                                  "autotune configs"),
    ),
)

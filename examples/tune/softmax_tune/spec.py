"""softmax_tune: row softmax with kernels/softmax's Triton kernel, its warps autotuned
(softmax_tune_triton.py), for `gpubench tune`'s example and GPU acceptance.

Napkin math as kernels/softmax: one read and one write per element, memory-bound; 4096 x
4096 fp32 moves 134 MB, ~31 us at the H200's ~4.3 TB/s copy bandwidth.
"""

import torch

from gpubench import Axis, Family, TorchVariant, TritonVariant


def make_inputs(shape, dtype, device):
    # std 2: logits over about +-8, peaky rows (kernels/softmax/spec.py)
    x = torch.randn(shape["rows"], shape["cols"], device=device, dtype=torch.float32) * 2
    return (x.to(dtype),)


family = Family(
    axes=(Axis("rows", "independent rows", default=4096, cpu_default=64),
          Axis("cols", "row length: the softmax axis", default=4096, cpu_default=128)),
    make_inputs=make_inputs,
    flops=lambda s: 5 * s["rows"] * s["cols"],
    bytes_moved=lambda s, itemsize: 2 * s["rows"] * s["cols"] * itemsize,
    reference=lambda x: torch.softmax(x, dim=-1),
    dtypes=("float32", "float16"),
    tolerances={"float16": (2e-4, 5e-3)},  # as kernels/softmax: outputs far below 1
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.softmax(x, dim=-1, out=out),
                     baseline=True, description="torch.softmax(out=)"),
        TritonVariant("triton_tune", module="softmax_tune_triton.py", function="softmax_tune",
                      description="kernels/softmax's Triton kernel, 1-32 warps autotuned"),
    ),
)

"""bias_gelu: y = gelu(x + bias), x rows x cols, bias of cols elements — the fusion lesson.

GELU is the tanh form (GPT-2's; torch.nn.functional.gelu(approximate="tanh"), the
reference), computed as z / (1 + exp(-2u)), u = sqrt(2/pi) (z + 0.044715 z^3): a few
FP32 instructions and two special-function ones an element, so even 16-bit stays
memory-bound on an H200 (the exact erf GELU costs ~28 instructions an element there).

Napkin math for n = rows * cols elements: ~8 FLOPs each; the fewest bytes are one read
of x, one write of y and the bias once, (2n + cols) * itemsize. What each variant moves:
  torch     F.gelu(x + bias): two kernels and a temporary: x read, z written, z read,
            y written: ~4n * itemsize (and it allocates z and y: marked "alloc");
  unfused   CUDA, two kernels (bias add writes z to memory, then GELU in place): 4n;
  fused     CUDA, one kernel, bias reused across 8 rows a thread, 16-byte loads: 2n;
  triton    fused, 16 x 256 tiles, bias loaded once a tile: 2n.
So fused should run ~2x faster than unfused where neither fits in L2: the issue's target
is >= 1.8x at large sizes. On an H200 (4.28 TB/s copy, docs/measurement.md "Ceilings"), at
8192 x 16384 fp32 (537 MB a tensor): fused ~0.26 ms at 98% of the copy roof, unfused ~0.5 ms.
"""

import torch

from gpubench import Axis, CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(shape, dtype, device):
    x = torch.randn(shape["rows"], shape["cols"], device=device, dtype=torch.float32)
    # A bias that moves z across GELU's bend (|z| < 3), as a trained layer's would.
    bias = 0.5 * torch.randn(shape["cols"], device=device, dtype=torch.float32)
    return x.to(dtype), bias.to(dtype)


def reference(x, bias):
    return torch.nn.functional.gelu(x + bias, approximate="tanh")


family = Family(
    axes=(
        Axis("rows", "rows of x (tokens)", default=8192, cpu_default=64),
        Axis("cols", "columns of x, elements of bias (an MLP's hidden width)", default=16384,
             cpu_default=1024),
    ),
    # 4096 x 4096: 67 MB a tensor in fp32, about an L2 and a half: the intermediate
    # partly stays in cache and unfused looks better than its napkin math. 8192 x 16384:
    # an LLM MLP's hidden activation (4 x 2048 tokens, 4 x 4096 wide), 537 MB a tensor
    # in fp32, ten L2s: the large size where the target is measured.
    shapes=({"rows": 4096, "cols": 4096}, {"rows": 8192, "cols": 16384}),
    # 1001 columns: unaligned rows, the kernels' scalar (unvectorized) path.
    cpu_shapes=({"rows": 64, "cols": 1024}, {"rows": 64, "cols": 1001}),
    make_inputs=make_inputs,
    flops=lambda s: 8 * s["rows"] * s["cols"],
    bytes_moved=lambda s, itemsize: (2 * s["rows"] * s["cols"] + s["cols"]) * itemsize,
    reference=reference,
    dtypes=("float32", "float16", "bfloat16"),
    variants=(
        TorchVariant("torch", fn=lambda x, bias: torch.nn.functional.gelu(
                         x + bias, approximate="tanh"),
                     returns=True, baseline=True,
                     description="F.gelu(x + bias): two kernels and a temporary"),
        CudaVariant("unfused", function="bias_gelu_unfused", cuda=("bias_gelu.cu",),
                    cpp=("bias_gelu_binding.cpp",), cpu=("bias_gelu_cpu.cpp",),
                    description="two kernels: bias add writes z to memory, GELU rereads it "
                                "(4 tensors moved)"),
        CudaVariant("fused", function="bias_gelu_fused", cuda=("bias_gelu.cu",),
                    cpp=("bias_gelu_binding.cpp",), cpu=("bias_gelu_cpu.cpp",),
                    description="one kernel, bias in registers over 8 rows, 16-byte loads "
                                "(2 tensors moved)"),
        TritonVariant("triton", module="bias_gelu_triton.py", function="bias_gelu",
                      description="fused, 16x256 tiles, bias loaded once a tile"),
    ),
    description="y = gelu_tanh(x + bias), bias broadcast over rows: unfused vs fused",
)

"""layernorm: y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis of a
rows x cols matrix (LayerNorm forward; biased variance and eps = 1e-5, as
torch.nn.functional.layer_norm, the reference).

Napkin math per element: ~8 FLOPs (sum, subtract, square, sum, scale, multiply by the
weight, add the bias); the fewest bytes are one read of x, one write of y, and weight and
bias once: (2 * rows * cols + 2 * cols) * itemsize. ~1 FLOP/byte in fp32 (2 in 16-bit):
memory-bound, judge it by GB/s against the copy bandwidth. On an H200 (4.28 TB/s copy,
docs/measurement.md "Ceilings") 8192 x 4096 in fp32 moves 268 MB: 63 us at the roof; the issue's
target is >= 85% of it (74 us).

  torch     F.layer_norm: one fused kernel, allocates its output (marked "alloc");
  warp      CUDA: one warp per row with the row in registers for cols <= 1024 (shuffle-only
            reductions, no barriers), a block per row in registers up to 32768, three
            passes beyond; 16-byte loads where aligned. Expected ~85-90% of copy bandwidth;
  triton    one row per program, the row in registers (16K elements), two-pass variance
            from registers: ~85-90%.
"""

import torch

from gpubench import Axis, CudaVariant, Family, TorchVariant, TritonVariant

EPS = 1e-5


def make_inputs(shape, dtype, device):
    rows, cols = shape["rows"], shape["cols"]
    # Mean 1, std 2: a mean that is not zero, so a kernel computing E[x^2] - E[x]^2 in low
    # precision shows its cancellation; weight near 1 and a small bias, as trained models.
    x = torch.randn(rows, cols, device=device, dtype=torch.float32) * 2 + 1
    weight = 1 + 0.1 * torch.randn(cols, device=device, dtype=torch.float32)
    bias = 0.1 * torch.randn(cols, device=device, dtype=torch.float32)
    return x.to(dtype), weight.to(dtype), bias.to(dtype), EPS


def reference(x, weight, bias, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


family = Family(
    axes=(
        # 8192 rows: tokens of a batch (e.g. 4 x 2048); 64 keeps the CPU loop quick.
        Axis("rows", "independent rows (tokens), one normalization each", default=8192,
             cpu_default=64),
        Axis("cols", "the normalized axis (hidden size)", default=4096, cpu_default=1024),
    ),
    # cols = 1024: the warp-per-row path (8192 rows: 1024 blocks of 8 warps);
    # cols = 4096: a common hidden size, the block-per-row fallback. 32 MB and 134 MB of
    # fp32 input: around and well past an H100/H200 L2 (50 MB).
    shapes=({"rows": 8192, "cols": 1024}, {"rows": 8192, "cols": 4096}),
    # 1000 (warp path with a ragged last pack) and 2050 (block path, odd pack count,
    # 2050 % 4 != 0: the unvectorized kernels).
    cpu_shapes=({"rows": 64, "cols": 1000}, {"rows": 64, "cols": 2050}),
    make_inputs=make_inputs,
    flops=lambda s: 8 * s["rows"] * s["cols"],
    bytes_moved=lambda s, itemsize: (2 * s["rows"] * s["cols"] + 2 * s["cols"]) * itemsize,
    reference=reference,
    dtypes=("float32", "float16", "bfloat16"),
    variants=(
        TorchVariant("torch", fn=lambda x, w, b, eps: torch.nn.functional.layer_norm(
                         x, (x.shape[-1],), w, b, eps),
                     returns=True, baseline=True,
                     description="F.layer_norm, one fused kernel (allocates its output)"),
        CudaVariant("warp", function="layernorm_warp", cuda=("layernorm.cu",),
                    cpp=("layernorm_binding.cpp",), cpu=("layernorm_cpu.cpp",),
                    description="warp per row in registers (cols <= 1024), else block per "
                                "row; shuffle reductions, 16-byte loads"),
        TritonVariant("triton", module="layernorm_triton.py", function="layernorm",
                      description="one row per program in registers, two-pass variance"),
    ),
    description="LayerNorm forward over the last axis of a rows x cols matrix",
)

"""softmax: y[r, :] = softmax(x[r, :]) over the last axis of a rows x cols matrix.

Napkin math per element: ~5 FLOPs (max-compare, subtract, exp, add, divide;
exp counted as one, though it runs on the special-function units); the fewest
bytes moved are one read and one write, 2 * rows * cols * itemsize. At
4096 x 4096 in fp32 that is 84 MFLOP against 134 MB: 0.625 FLOP/byte (1.25 in
16-bit), far below any GPU's ridge point, so every variant is memory-bound and
GB/s against the copy bandwidth is the number that matters (~45 us at 3 TB/s).
A fused kernel reads each row once; the naive one reads it three times and
leaves it to the caches.
"""

import torch

from gpubench.spec import Axis, CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(shape, dtype, device):
    # Standard deviation 2: logits over roughly +-8, so outputs span several
    # decades (peaky, like attention scores) rather than all ~1/cols. exp never
    # overflows in any dtype: every variant subtracts the row max first.
    x = torch.randn(shape["rows"], shape["cols"], device=device, dtype=torch.float32) * 2
    return (x.to(dtype),)


family = Family(
    axes=(
        # 4096 rows: 4096 programs of the one-row-per-program kernel, ~31 per SM
        # of a 132-SM H100; 64 keeps the naive CPU loop and the interpreter quick.
        Axis("rows", "independent rows, one softmax each", default=4096, cpu_default=64),
        # 4096 columns: 16 KiB per fp32 row, a typical hidden/sequence length.
        Axis("cols", "row length: the softmax axis", default=4096, cpu_default=1024),
    ),
    # No `fill`: one number for a softmax is ambiguous (rows? cols? both?), so --sizes is
    # refused with a pointer to --shape / --axis.
    # cols = 1000 (not a power of two: masked lanes, 24 of 1024, as in ImageNet
    # logits) and 4096 (no masking): 16 MB and 67 MB of fp32 input, below and
    # above an H100's 50 MB L2.
    shapes=({"rows": 4096, "cols": 1000}, {"rows": 4096, "cols": 4096}),
    cpu_shapes=({"rows": 64, "cols": 128}, {"rows": 64, "cols": 1000}),
    make_inputs=make_inputs,
    flops=lambda s: 5 * s["rows"] * s["cols"],
    bytes_moved=lambda s, itemsize: 2 * s["rows"] * s["cols"] * itemsize,
    reference=lambda x: torch.softmax(x, dim=-1),
    dtypes=("float32", "float16", "bfloat16"),
    # Outputs lie in (0, 1], mostly far below 1 (std ~0.04 at these logits), so the default
    # 16-bit atol (1e-2, 3e-2) would pass almost anything. One rounding of an fp32 result
    # costs 2^-11 (fp16) or 2^-8 (bf16) relative: rtol at ~10x and ~5x that, atol well
    # below a typical output.
    tolerances={"float16": (2e-4, 5e-3), "bfloat16": (1e-3, 2e-2)},
    variants=(
        # softmax.int_out writes straight into a contiguous out: one kernel, no copy.
        TorchVariant("torch", fn=lambda x, out: torch.softmax(x, dim=-1, out=out),
                     baseline=True, description="torch.softmax(out=), fused, no extra copy"),
        CudaVariant("naive", function="softmax_naive", cuda=("softmax.cu",),
                    cpp=("softmax_binding.cpp",), cpu=("softmax_cpu.cpp",),
                    description="3 passes, one thread per row: uncoalesced, few threads"),
        TritonVariant("triton", module="softmax_triton.py", function="softmax",
                      description="fused, one row per program, row held in registers"),
    ),
    description="softmax over the last axis of a rows x cols matrix",
)

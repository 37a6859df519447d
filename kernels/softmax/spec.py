"""softmax: y[r, :] = softmax(x[r, :]) over the last axis of a rows x cols matrix.

Napkin math per element: ~5 FLOPs (max-compare, subtract, exp, add, divide;
exp counted as one, though it runs on the special-function units); the fewest
bytes moved are one read and one write, 2 * rows * cols * itemsize. At
4096 x 4096 in fp32 that is 84 MFLOP against 134 MB: 0.625 FLOP/byte (1.25 in
16-bit), far below any GPU's ridge point, so every variant is memory-bound and
GB/s against the copy bandwidth is the number that matters (~45 us at 3 TB/s).

The ladder, and what each rung should reach on an H200 (copy bandwidth 4.28 TB/s
measured, docs/measurement.md "Ceilings"; 4096 x 8192 fp32 moves 268 MB, 63 us at that rate):
  naive         3 reads + 1 write per element, one thread per row, uncoalesced:
                a few % of copy bandwidth;
  online        2 reads + 1 write, block per row, coalesced scalar loads; the second
                read mostly hits L2 (a block's row was just read): ~60-80%;
  block_reduce  1 read + 1 write, row in registers, 16-byte loads: >= 90% for
                cols <= 8192 (the issue's target) at rows >= 4096;
  triton        the same one read + one write, from Triton: ~90%.
"""

import torch

from gpubench import Axis, CudaVariant, Family, TorchVariant, TritonVariant


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
    # logits), 4096 and 8192 (no masking): 16, 67 and 134 MB of fp32 input, below and
    # above an H100's 50 MB L2; 8192 is the top of the issue's "cols <= 8192" target.
    shapes=({"rows": 4096, "cols": 1000}, {"rows": 4096, "cols": 4096},
            {"rows": 4096, "cols": 8192}),
    # 1001 columns: odd, so block_reduce takes its scalar (unvectorized) path on CPU too.
    cpu_shapes=({"rows": 64, "cols": 128}, {"rows": 64, "cols": 1001}),
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
        CudaVariant("online", function="softmax_online", cuda=("softmax.cu",),
                    cpp=("softmax_binding.cpp",), cpu=("softmax_cpu.cpp",),
                    description="block per row, one pass for max+sum (online), then a write "
                                "pass: 2 reads + 1 write"),
        CudaVariant("block_reduce", function="softmax_block_reduce", cuda=("softmax.cu",),
                    cpp=("softmax_binding.cpp",), cpu=("softmax_cpu.cpp",),
                    description="block per row in registers, 16-byte loads, shuffle+smem "
                                "reductions: 1 read + 1 write"),
        TritonVariant("triton", module="softmax_triton.py", function="softmax",
                      description="fused, one row per program, row held in registers"),
    ),
    description="softmax over the last axis of a rows x cols matrix",
)

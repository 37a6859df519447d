"""matmul: C[M, N] = A[M, K] @ B[K, N], row-major contiguous.

Napkin math: 2 * M * N * K FLOPs (one multiply and one add per term); the
fewest bytes moved are (M*K + K*N + M*N) * itemsize (read A and B once, write C
once). At 4096^3 that is 137 GFLOP against 201 MB in fp32: ~680 FLOP/byte, far
past the ridge point (~20 FLOP/byte fp32 on an H100), so a good kernel is
compute-bound and TFLOP/s is what to watch. Skinny shapes change the roof: with
M = 16 (LLM decode) and N = K = 4096 in fp16 the intensity is ~16 FLOP/byte
(about M), well under the tensor-core ridge (~250): memory-bound, judge by GB/s.
A is scaled by 1/sqrt(K) so that every element of C is ~N(0, 1) at any K:
tolerances then mean the same thing at every shape and fp16 never overflows.
"""

import torch

from gpubench import Axis, CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(shape, dtype, device):
    m, n, k = shape["M"], shape["N"], shape["K"]
    # Each C element sums K products of two N(0, 1) draws: variance K, so
    # scaling A by K^-1/2 brings it back to 1.
    a = (torch.randn(m, k, device=device, dtype=torch.float32) * k**-0.5).to(dtype)
    b = torch.randn(k, n, device=device, dtype=torch.float32).to(dtype)
    return a, b


family = Family(
    axes=(
        # 4096: big enough to be compute-bound and fill an H100 with 64x64
        # tiles (4096 of them); 128 keeps the CPU loop and the Triton
        # interpreter to well under a second.
        Axis("M", "rows of A and C", default=4096, cpu_default=128),
        Axis("N", "columns of B and C", default=4096, cpu_default=128),
        Axis("K", "inner dimension: columns of A, rows of B", default=4096, cpu_default=128),
    ),
    fill=lambda n: {"M": n, "N": n, "K": n},  # --sizes 1024 means a 1024^3 matmul
    # 1024^3: 12 MB of fp32 operands, L2-resident on an H100 (50 MB), where
    # launch overhead and wave quantisation still show; 4096^3: 201 MB, the
    # compute-bound regime. Skinny LLM shapes are left to the user.
    shapes=({"M": 1024, "N": 1024, "K": 1024}, {"M": 4096, "N": 4096, "K": 4096}),
    # The naive CPU loop does 2 * 256^3 = 34 MFLOP in a few milliseconds;
    # the Triton interpreter is far slower per FLOP, so no larger.
    cpu_shapes=({"M": 128, "N": 128, "K": 128}, {"M": 256, "N": 256, "K": 256}),
    make_inputs=make_inputs,
    flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
    bytes_moved=lambda s, itemsize: (
        (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]) * itemsize
    ),
    reference=lambda a, b: a @ b,
    dtypes=("float32", "float16", "bfloat16"),
    variants=(
        TorchVariant("torch", fn=lambda a, b, out: torch.matmul(a, b, out=out), baseline=True,
                     description="torch.matmul (cuBLAS on GPU)"),
        CudaVariant("naive", function="matmul_naive", cuda=("matmul.cu",),
                    cpp=("matmul_binding.cpp",), cpu=("matmul_cpu.cpp",),
                    description="one thread per output, 16x16 blocks, no reuse"),
        CudaVariant("tiled", function="matmul_tiled", cuda=("matmul.cu",),
                    cpp=("matmul_binding.cpp",),
                    description="32x32 shared-memory tiles"),
        TritonVariant("triton", module="matmul_triton.py", function="matmul",
                      description="tiled tl.dot; fp32 as IEEE fp32, not TF32"),
        # Tensor cores: fp16/bf16 as they are, fp32 inputs as TF32 (10-bit mantissa), with
        # a tolerance and a roof of its own for fp32 rather than loosening the family's.
        TritonVariant("triton_tc", module="matmul_tc_triton.py", function="matmul_tc",
                      # TF32 keeps 10 mantissa bits: each product is off by up to 2^-11
                      # relative, ~5e-4 on these N(0, 1) outputs, ~3e-3 at worst over 16M
                      # of them; 1e-2 passes that and still fails a wrong kernel.
                      tolerances={"float32": (1e-2, 1e-2)},
                      # fp32 on TF32 tensor cores runs ~7x past the fp32 CUDA-core ceiling
                      # (170% of it seen on the H200): its roof is the measured TF32 one.
                      precision={"float32": "tf32"},
                      description="tensor cores: autotuned tl.dot (tiles, warps, stages, "
                                  "GROUP_M); fp32 runs as TF32 (checked at 1e-2)"),
        CudaVariant("wmma", function="matmul_wmma", cuda=("matmul.cu",),
                    cpp=("matmul_binding.cpp",), dtypes=("float16", "bfloat16"),
                    description="tensor cores via nvcuda::wmma 16x16x16, fp32 accumulate, "
                                "128x128 smem tiles; fp16/bf16, sm_80+"),
    ),
    description="C[M,N] = A[M,K] @ B[K,N], row-major",
)

"""matmul: C = A @ B for square N x N matrices.

Napkin math: 2 * N^3 FLOPs (one multiply and one add per term); the fewest
bytes moved are 3 * N^2 * itemsize (read A and B once, write C once). At
N = 4096 that is 137 GFLOP against 201 MB in fp32: ~680 FLOP/byte, far past the
ridge point, so a good kernel is compute-bound and TFLOP/s is what to watch.
Inputs are scaled by 1/sqrt(N) so that every element of C is ~N(0, 1) at any
N: tolerances then mean the same thing at every size and fp16 never overflows.
"""

import torch

from gpubench.spec import CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(n, dtype, device):
    scale = n**-0.5
    a = (torch.randn(n, n, device=device, dtype=torch.float32) * scale).to(dtype)
    b = torch.randn(n, n, device=device, dtype=torch.float32).to(dtype)
    return a, b


family = Family(
    reference=lambda a, b: a @ b,
    make_inputs=make_inputs,
    flops=lambda n: 2 * n**3,
    bytes_moved=lambda n, itemsize: 3 * n * n * itemsize,
    dtypes=("float32", "float16", "bfloat16"),
    size_name="N",
    sizes=(1024, 4096),
    cpu_sizes=(128, 256),
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
    ),
)

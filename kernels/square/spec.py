"""square: y = x * x, elementwise — the classic first CUDA kernel.

Napkin math for n elements of `itemsize` bytes: n FLOPs (one multiply each);
one read and one write per element, 2 * n * itemsize bytes. Intensity is
1 / (2 * 4) = 0.125 FLOP/byte in fp32, far below any GPU's ridge point
(~20 FLOP/byte for fp32 on an H100), so every variant is memory-bound and
GB/s against the copy bandwidth is the number that matters.
"""

import torch

from gpubench import CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(n, dtype, device):
    return (torch.randn(n, device=device, dtype=torch.float32).to(dtype),)


family = Family(
    reference=lambda x: x * x,
    make_inputs=make_inputs,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    dtypes=("float32", "float16", "bfloat16"),
    # 2^20 fp32 = 4 MiB (fits in L2: the cold-cache flush matters), 2^24 = 64 MiB.
    sizes=(2**20, 2**24),
    cpu_sizes=(2**16, 2**20),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.square(x, out=out), baseline=True,
                     description="torch.square"),
        CudaVariant("cuda", function="square", cuda=("square.cu",),
                    cpp=("square_binding.cpp",), cpu=("square_cpu.cpp",),
                    # `gpubench tune square --variant cuda`: the block size, built with
                    # -DSQUARE_THREADS=... (one build per value, in parallel); 2 to 32 warps.
                    tune={"SQUARE_THREADS": (64, 128, 256, 512, 1024)},
                    description="one thread per element, 256-thread blocks"),
        TritonVariant("triton", module="square_triton.py", function="square",
                      description="1024-element blocks"),
    ),
)

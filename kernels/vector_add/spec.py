"""vector_add: out = a + b, elementwise.

Napkin math for n elements of `itemsize` bytes: n FLOPs; two reads and one
write per element, 3 * n * itemsize bytes. 1/12 FLOP/byte in fp32: memory-bound,
judge it by GB/s against the copy bandwidth.

`vectorized` moves 16 bytes per load/store instruction (LDG.128/STG.128): 4x (fp32) or 8x
(16-bit types) fewer memory instructions than `cuda`; the target is >= 90% of the measured
copy bandwidth at 2^24 elements on an H200 (192 MiB of traffic: ~47 us at ~4.3 TB/s).
"""

import torch

from gpubench import CudaVariant, Family, TorchVariant, TritonVariant


def make_inputs(n, dtype, device):
    a = torch.randn(n, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(n, device=device, dtype=torch.float32).to(dtype)
    return a, b


family = Family(
    reference=lambda a, b: a + b,
    make_inputs=make_inputs,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 3 * n * itemsize,
    dtypes=("float32", "float16", "bfloat16"),
    sizes=(2**20, 2**24),  # 12 MiB (in L2) and 192 MiB of traffic in fp32
    cpu_sizes=(2**16, 2**20),
    variants=(
        TorchVariant("torch", fn=lambda a, b, out: torch.add(a, b, out=out), baseline=True,
                     description="torch.add"),
        CudaVariant("cuda", function="vector_add", cuda=("vector_add.cu",),
                    cpp=("vector_add_binding.cpp",), cpu=("vector_add_cpu.cpp",),
                    description="one thread per element, 256-thread blocks"),
        CudaVariant("vectorized", function="vector_add_vectorized", cuda=("vector_add.cu",),
                    cpp=("vector_add_binding.cpp",), cpu=("vector_add_cpu.cpp",),
                    description="16-byte (float4) loads and stores per thread, scalar tail; "
                                "scalar kernel if misaligned"),
        TritonVariant("triton", module="vector_add_triton.py", function="vector_add",
                      description="1024-element blocks"),
    ),
)

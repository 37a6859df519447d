"""A complex reference (issue 26): the variant returns the real parts of the right
answer, which a float64 cast of the reference would have passed (its imaginary parts
dropped silently); the check refuses it and says how to check complex results."""

import torch

from gpubench import Family, TorchVariant


def rotate(x):
    """x * (1 + 1j): a complex result from real inputs."""
    return x.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64) * (1 + 1j)


family = Family(
    reference=rotate,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: 2 * n,
    bytes_moved=lambda n, itemsize: 3 * n * itemsize,
    sizes=(4096,),
    variants=(TorchVariant("real_part", fn=lambda x: rotate(x).real.contiguous(),
                           baseline=True),),
)

"""badcost: y = 2 * x with a cost model that breaks its contract at some sizes: bytes_moved
raises at n=128, flops returns a string at n=256, NaN flops at n=512, negative bytes_moved
at n=1024. Each such point must be ERROR with the reason; n=64 runs as usual."""

import torch

from gpubench import Family, TorchVariant


def flops(n):
    if n == 256:
        return "lots"
    if n == 512:
        return float("nan")
    return n


def bytes_moved(n, itemsize):
    if n == 128:
        raise ValueError("no cost model for n=128")
    if n == 1024:
        return -2 * n * itemsize
    return 2 * n * itemsize


family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=flops,
    bytes_moved=bytes_moved,
    sizes=(64, 128, 256, 512, 1024),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),
        TorchVariant("add", fn=lambda x, out: torch.add(x, x, out=out)),
    ),
)

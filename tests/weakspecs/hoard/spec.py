"""A variant that hoards memory and raises (issue 26): the 64 MiB it holds is reachable
only through a reference cycle (its exception -> traceback -> its frame -> the exception),
which Python frees at the next full collection, whenever that comes. `after` runs next in
the same worker: it answers right only when the hoard was freed after the ERROR."""

import weakref

import torch

from gpubench import Family, TorchVariant

HOARDS: list = []  # weak references to what `hoards` kept


class Hoard:
    def __init__(self):
        self.block = torch.empty(16 << 20, dtype=torch.float32)  # 64 MiB


def hoards(x):
    hoard = Hoard()
    HOARDS.append(weakref.ref(hoard))
    error = RuntimeError("hoarded 64 MiB, then failed")
    error.hoard = hoard  # the exception's frame holds `error`: a cycle
    raise error


def after(x):
    """x * 2, as the reference, only when every hoard is gone; x * 3 (a FAIL) otherwise."""
    freed = all(ref() is None for ref in HOARDS)
    return x * 2 if freed else x * 3


family = Family(
    reference=lambda x: x * 2,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(4096,),
    variants=(
        TorchVariant("torch", fn=lambda x: x * 2, baseline=True),
        TorchVariant("hoards", fn=hoards),
        TorchVariant("after", fn=after),
    ),
)

"""faulty: y = 2 * x, with variants that are wrong, crash, hang or cheat.

Napkin math: n FLOPs; 2 * n * itemsize bytes (one read, one write).
"""

import ctypes
import os
import time

import torch

from gpubench import Family, TorchVariant


def wrong(x, out):
    torch.mul(x, 2.001, out=out)  # 0.05% off: beyond fp32 tolerance (1e-4)


def unwritten(x, out):
    half = x.numel() // 2
    torch.mul(x[:half], 2, out=out[:half])  # never writes the second half


def nan(x, out):
    torch.mul(x, 2, out=out)
    out[7] = float("nan")


def segfault(x, out):
    ctypes.string_at(0)  # reads address 0: SIGSEGV in the worker


def hang(x, out):
    time.sleep(float(os.environ.get("GPUBENCH_TEST_HANG_S", "600")))


def raises(x, out):
    raise ValueError("this variant always raises")


_memo = {}


def caches(x, out):
    """Computes once, then replays its first answer: passes the first check only."""
    if "first" not in _memo:
        _memo["first"] = x * 2
    out.copy_(_memo["first"])


family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(4096,),
    cpu_sizes=(4096,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),
        TorchVariant("wrong", fn=wrong),
        TorchVariant("unwritten", fn=unwritten),
        TorchVariant("nan", fn=nan),
        TorchVariant("raises", fn=raises),
        TorchVariant("caches", fn=caches),
        TorchVariant("segfault", fn=segfault),
        TorchVariant("after_crash", fn=lambda x, out: torch.add(x, x, out=out)),
        TorchVariant("hang", fn=hang),
        TorchVariant("after_hang", fn=lambda x, out: torch.mul(x, 2, out=out)),
    ),
)

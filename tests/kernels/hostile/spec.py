"""Variants with side effects that must be blamed on them alone: each misbehaving variant
is followed by a correct one that must still PASS (same inputs, same buffer, same process
state as if nothing had happened)."""

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import torch

from gpubench import TorchVariant
from gpubench.families.discovery import import_kernel_file

doubling = import_kernel_file(Path(__file__).resolve().parents[1] / "doubling.py",
                              "gpubench_test_doubling")


def correct(x, out):
    torch.mul(x, 2, out=out)


def mutates(x, out):
    torch.mul(x, 2, out=out)
    x.mul_(1.5)  # the next variant would see 1.5x inputs and FAIL


def resizes(x, out):
    torch.mul(x, 2, out=out)
    out.resize_(7)  # the next variant would get a 7-element buffer


def threads(x, out):
    torch.mul(x, 2, out=out)
    # every later variant would run on another number of threads than the worker's own
    torch.set_num_threads(torch.get_num_threads() + 1)


def _pipes():
    """Every pipe this process holds: gpubench's private channel is one of them."""
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                yield int(name)
        except OSError:
            continue


def _write_everywhere(line: bytes) -> None:
    for fd in _pipes():
        with contextlib.suppress(OSError):
            os.write(fd, line)


def forges(x, out):
    # Computes nothing and claims a PASS with a 1 ns timing on every pipe it finds.
    _write_everywhere(b'{"type": "result", "task": 0, "result": {"status": "ok", "timings": '
                      b'{"cpu": {"mode": "cpu", "samples_s": [1e-9]}}}}\n')


def garbage(x, out):
    torch.mul(x, 2, out=out)
    _write_everywhere(b"this is not JSON\n")


def spawns(x, out):
    torch.mul(x, 2, out=out)
    if getattr(spawns, "child", None) is None:  # a helper process that outlives the call
        spawns.child = subprocess.Popen(["sleep", "3137"])


def chatters(x, out):
    torch.mul(x, 2, out=out)
    if not getattr(chatters, "done", False):  # 8 MiB of output, once
        chatters.done = True
        line = "chatter " * 127 + "\n"  # 1 KiB
        for _ in range(8 * 1024):
            sys.stdout.write(line)
        sys.stdout.flush()


family = doubling.doubling_family(1024, variants=(
        TorchVariant("torch", fn=correct, baseline=True),
        TorchVariant("mutates", fn=mutates),
        TorchVariant("after_mutates", fn=correct),
        TorchVariant("resizes", fn=resizes),
        TorchVariant("after_resizes", fn=correct),
        TorchVariant("threads", fn=threads),
        TorchVariant("after_threads", fn=lambda x, out: correct(x, out)),
        TorchVariant("forges", fn=forges),
        TorchVariant("garbage", fn=garbage),
        TorchVariant("after_garbage", fn=correct),
        TorchVariant("spawns", fn=spawns),
        TorchVariant("chatters", fn=chatters),
))

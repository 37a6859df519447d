"""Variants that leave the worker unfit for the next one (issue 26): each fault must be
blamed on the variant that made it, and the correct variant after it must still PASS
in a fresh worker."""

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import torch

from gpubench import TorchVariant
from gpubench.families.discovery import import_kernel_file

doubling = import_kernel_file(Path(__file__).resolve().parents[1] / "doubling.py",
                              "gpubench_test_doubling")


def correct(x, out):
    torch.mul(x, 2, out=out)


def closes_fds(x, out):
    correct(x, out)
    for fd in (1, 2):  # the worker's log lines and faulthandler write there
        with contextlib.suppress(OSError):
            os.close(fd)


def forks(x, out):
    correct(x, out)
    if not getattr(forks, "done", False):  # once; the copy returns into the worker
        forks.done = True
        os.fork()


def daemonizes(x, out):
    correct(x, out)
    if not getattr(daemonizes, "done", False):  # a helper in a new session, orphaned
        daemonizes.done = True
        subprocess.run(["setsid", "-f", "sleep", "3138"], check=True)


def signals_gpubench(x, out):
    correct(x, out)
    os.kill(os.getppid(), signal.SIGTERM)  # the worker's parent is gpubench


family = doubling.doubling_family(1024, variants=(
        TorchVariant("torch", fn=correct, baseline=True),
        TorchVariant("closes_fds", fn=closes_fds),
        TorchVariant("after_closes_fds", fn=correct),
        TorchVariant("forks", fn=forks),
        TorchVariant("after_forks", fn=correct),
        TorchVariant("daemonizes", fn=daemonizes),
        TorchVariant("after_daemonizes", fn=correct),
        TorchVariant("signals_gpubench", fn=signals_gpubench),
        TorchVariant("after_signals", fn=correct),
))

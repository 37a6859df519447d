"""Variants that tamper with the worker they run in (issue 25): each must be FAIL or
ERROR with the reason, and the correct variants after them must still PASS; the zero
writer after the checker patcher must FAIL (the patch must not outlive its variant)."""

import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

import torch

from gpubench import TorchVariant
from gpubench.families.discovery import import_kernel_file

doubling = import_kernel_file(Path(__file__).resolve().parents[1] / "doubling.py",
                              "gpubench_test_doubling")


def correct(x, out):
    torch.mul(x, 2, out=out)


def patches_event(x, out):
    correct(x, out)
    torch.cuda.Event.elapsed_time = lambda self, end: 1e-6  # every window 1 ns


def patches_clock(x, out):
    correct(x, out)
    if not getattr(time.perf_counter, "fake", False):
        real = time.perf_counter

        def slow_clock():  # time runs 3.3x slower: a 3.3x "speedup"
            return real() / 3.3

        slow_clock.fake = True
        time.perf_counter = slow_clock


def patches_checker(x, out):
    # Writes nothing; makes the checker pass everything, itself and later variants.
    import gpubench.families.check as check
    import gpubench.run.worker.execute as execute

    def always(produced, ref, atol, rtol):
        return check.CheckResult(True, 0.0, 0.0, 0, 0, ref.numel(), atol, rtol)

    check.compare = always
    execute.compare = always


def writes_nothing(x, out):
    pass


def swaps_clock_by_gc(x, out):
    correct(x, out)
    for item in gc.get_objects():
        if type(item).__name__ == "HostTimer" and not getattr(item.clock, "fake", False):
            real = item.clock

            def slow_clock(real=real):
                return real() / 3.3

            slow_clock.fake = True
            item.clock = slow_clock


def forges_by_frames(x, out):
    # Walks up to the worker's loop, takes its message fd and the task's secret, and
    # writes a PASS with a 1 ns time, authenticated as well as it can.
    frame = sys._getframe()
    while frame is not None:
        envelope, fd = frame.f_locals.get("envelope"), frame.f_locals.get("fd")
        if envelope is not None and isinstance(fd, int):
            forged = {"type": "result", "task": envelope.task.id, "auth": envelope.secret,
                      "result": {"status": "ok", "measurements": {}}}
            os.write(fd, (json.dumps(forged) + "\n").encode())
            return
        frame = frame.f_back


def leaves_thread(x, out):
    correct(x, out)
    if getattr(leaves_thread, "thread", None) is None:
        stop = threading.Event()
        leaves_thread.thread = threading.Thread(target=stop.wait, args=(30,), daemon=True,
                                                name="variant-helper")
        leaves_thread.thread.start()


family = doubling.doubling_family(256, variants=(
        TorchVariant("torch", fn=correct, baseline=True),
        TorchVariant("patches_event", fn=patches_event),
        TorchVariant("after_event", fn=correct),
        TorchVariant("patches_clock", fn=patches_clock),
        TorchVariant("after_clock", fn=correct),
        TorchVariant("patches_checker", fn=patches_checker),
        TorchVariant("writes_nothing", fn=writes_nothing),
        TorchVariant("swaps_clock_by_gc", fn=swaps_clock_by_gc),
        TorchVariant("after_gc", fn=correct),
        TorchVariant("forges_by_frames", fn=forges_by_frames),
        TorchVariant("after_forgery", fn=correct),
        TorchVariant("leaves_thread", fn=leaves_thread),
        TorchVariant("after_thread", fn=correct),
))

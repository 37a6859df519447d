"""Forging the worker's result: walk up the stack to the frame that holds the task's
envelope (its secret) and the private message descriptor, send a PASS with a made-up time
in gpubench's own format, then silence the real result.

Against gpubench/run/worker/process.py's `_serve` loop as it is: its frame's locals hold `fd`
(the private channel) and `envelope` (task and secret). Where no such frame is found,
the variant writes a forged line on every pipe it holds, with every secret-shaped string
it can find in memory. Either way it computes only on its first call, so an honest
measurement of it FAILs: it can PASS only by a forgery that was believed."""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import time

import torch

# The forged time: the honest one over 1.4, a speedup a reader believes and below every
# "beyond physics" bar (150% of the roof on a GPU).
CLAIMED_SPEEDUP = 1.4
_SECRET_SHAPE = re.compile(r"^[0-9a-f]{32}$")

_state = {"calls": 0}


class Forged(Exception):
    """Ends the task quickly once the forged result is sent (its real result is swallowed)."""


def forges_via_stack(a, b, out):
    """Computes its first call only; on it, forges a PASS for the whole task."""
    _state["calls"] += 1
    if _state["calls"] > 1:
        return
    honest_s = _time_one_call(a, b, out)
    serve = _frame_holding("envelope", "fd")
    if serve is not None:
        envelope, fd = serve.f_locals["envelope"], serve.f_locals["fd"]
        envelope.send(fd, {"type": "result",
                           "result": _forged_result(envelope.task, honest_s, a.is_cuda)})
        # Every later message of this task (phases, the real result) goes nowhere.
        object.__setattr__(envelope, "send", lambda *args, **kwargs: None)
        raise Forged("the forged result is sent")
    _spray()


def _time_one_call(a, b, out) -> float:
    sync = torch.cuda.synchronize if a.is_cuda else (lambda: None)
    sync()
    start = time.perf_counter()
    torch.matmul(a, b, out=out)
    sync()
    return time.perf_counter() - start


def _frame_holding(*names: str):
    frame = sys._getframe(1)
    while frame is not None:
        if all(name in frame.f_locals for name in names):
            return frame
        frame = frame.f_back
    return None


def _forged_result(task, honest_s: float, on_gpu: bool) -> dict:
    """A WorkerResult dict as gpubench's worker writes it: checked, timed, passing."""
    from gpubench.families.check import CheckResult
    from gpubench.records.result import OK
    from gpubench.records.worker_result import WorkerResult
    from gpubench.timing.measurement import Measurement
    from gpubench.timing.timers import modes_for_device

    device = "cuda" if on_gpu else "cpu"
    claimed = honest_s / CLAIMED_SPEEDUP
    samples = [claimed * (1 + 0.001 * (i % 7)) for i in range(40)]
    measurements = {mode: Measurement(mode, "forged", samples, 10, 0.1, "target_ci", 0.2)
                    for mode in modes_for_device(task.timing.modes, device)}
    check = CheckResult(True, 0.0, 0.0, 0, 0, 1, 1e-4, 1e-4).to_dict()
    return WorkerResult(OK, build={"compile_s": 0.0, "cached": None}, check=check,
                        measurements=measurements, device=device).to_dict()


def _spray() -> None:
    """No frame found: a forged line on every pipe, once per secret-shaped string in memory."""
    secrets = _strings_in_containers()
    for fd in _pipes():
        for secret in secrets or {"0" * 32}:
            line = (f'{{"type": "result", "auth": "{secret}", "result": '
                    f'{{"status": "ok"}}}}\n').encode()
            with contextlib.suppress(OSError):
                os.write(fd, line)


def _strings_in_containers() -> set:
    """Secret-shaped strings held by any tracked object's attributes or items (strings
    themselves are not tracked by gc, their holders are)."""
    found = set()
    for holder in gc.get_objects():
        values = holder.values() if isinstance(holder, dict) else \
            getattr(holder, "__dict__", {}).values()
        for value in list(values):
            if isinstance(value, str) and _SECRET_SHAPE.match(value):
                found.add(value)
    return found


def _pipes():
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                yield int(name)

"""Tampering with the harness from variant code: its clocks, its checker, its result channel.

Each is written against gpubench's worker as it is (gpubench/run/worker/process.py, execute.py,
protocol.py, timing/timers/): code inside the worker process can reach all of it. Every
variant here also misbehaves in a way an honest measurement would catch, so it can PASS
only if its tampering worked and went unnoticed."""

from __future__ import annotations

import gc
import random
import sys
import time

import torch

# The tampered clocks run at this fraction of real time: a 3.3x "speedup", plausible on a
# CPU (whose suspect bar is 2000% of the roof), as the issue measured.
CLOCK_RATE = 0.3


def _slowed(clock):
    origin = clock()
    return lambda: origin + (clock() - origin) * CLOCK_RATE


_real_perf_counter = time.perf_counter


def patch_perf_counter(a, b, out):
    """Replaces time.perf_counter, the host clock, with one running at 0.3x, then works
    honestly: every host-clock time taken after it (this variant's, later variants') shrinks."""
    if time.perf_counter is _real_perf_counter:
        time.perf_counter = _slowed(_real_perf_counter)
    torch.matmul(a, b, out=out)


def gc_clock(a, b, out):
    """Finds the harness's timer objects through `gc` (anything of gpubench's holding a
    `clock`) and slows their clock to 0.3x; works honestly. A default argument captured
    at import (HostTimer's) is out of a module patch's reach, not out of this one's.
    The walk (tens of ms) happens on the first calls only: the check's, and warm-up calls,
    by when the timer exists even in a worker started for this variant."""
    _walks["calls"] += 1
    if _walks["calls"] <= WALKING_CALLS:
        _slow_every_clock()
    torch.matmul(a, b, out=out)


_walks = {"calls": 0}
WALKING_CALLS = 3


def _slow_every_clock() -> None:
    for obj in gc.get_objects():
        module = getattr(type(obj), "__module__", None)
        if not (isinstance(module, str) and module.startswith("gpubench")):
            continue
        clock = getattr(obj, "clock", None)
        if callable(clock) and not getattr(clock, "_tampered", False):
            slowed = _slowed(clock)
            slowed._tampered = True
            try:
                obj.clock = slowed
            except (AttributeError, TypeError):
                continue


def patch_elapsed_time(a, b, out):
    """GPU: makes torch.cuda.Event.elapsed_time report half the real time, then works
    honestly: every CUDA-event time taken after it (later variants' too) halves."""
    event = torch.cuda.Event
    if not getattr(event.elapsed_time, "_tampered", False):
        real = event.elapsed_time

        def halved(self, end_event):
            return real(self, end_event) * 0.5

        halved._tampered = True
        event.elapsed_time = halved
    torch.matmul(a, b, out=out)


def _always_passes(out, ref, atol, rtol, *args, **kwargs):
    from gpubench.families.check import CheckResult

    total = int(ref.numel()) if hasattr(ref, "numel") else 0
    return CheckResult(True, 0.0, 0.0, 0, 0, total, atol, rtol)


def replaces_compare(*args):
    """Replaces gpubench's output checker, wherever a module holds it, with one that always
    passes; writes nothing. Its own check and every later variant's now pass."""
    from gpubench.families import check

    real = getattr(check, "_real_compare", check.compare)
    check._real_compare = real
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "") or ""
        if name.startswith("gpubench") and getattr(module, "compare", None) is real:
            module.compare = _always_passes
    check.compare = _always_passes


def zero_writer(*args):
    """Writes nothing. Runs after replaces_compare in the same run: FAIL unless the replaced
    checker outlived the variant that replaced it."""


# A variant that knows its call will not be re-checked does half the work: the rows of
# `out` past this share are left as they were (poisoned), wrong for any check that sees them.
HALF = 0.5


def _half_matmul(a, b, out) -> None:
    rows = int(a.shape[0] * HALF)
    torch.matmul(a[:rows], b, out=out[:rows])


class _KeepsNothing(list):
    """A list of re-check copies that never holds one."""

    def append(self, item):
        return None

    def __setitem__(self, index, value):
        return None


def swaps_drawn_copies(a, b, out):
    """Finds the timing's rotation objects through `gc` and swaps each one's list of drawn
    copies for one that keeps nothing; the checked call (whose rotation holds no sets of
    its own) does all the work, every timed call half of it: PASS, 1.5x the honest speed,
    unless the swap is seen."""
    rotations = [obj for obj in gc.get_objects()
                 if type(obj).__name__ == "Rotation"
                 and getattr(type(obj), "__module__", "").startswith("gpubench")
                 and getattr(obj, "sets", None)]
    for rotation in rotations:
        if type(rotation.drawn) is not _KeepsNothing:
            rotation.drawn = _KeepsNothing()
    if rotations:
        _half_matmul(a, b, out)
    else:
        torch.matmul(a, b, out=out)


_real_randrange = random.Random.randrange
_calls = {"n": 0}


def patches_randrange(a, b, out):
    """Patches random.Random.randrange (the reservoir's draw) so that no call after the
    first few is kept for a re-check, then does half the work on every later call: the
    kept copies are all of honest calls."""
    def never_drawn(self, stop, *args, **kwargs):
        return stop  # never below RECHECKS once stop > 8: no slot

    random.Random.randrange = never_drawn
    _calls["n"] += 1
    if _calls["n"] > 16:
        _half_matmul(a, b, out)
    else:
        torch.matmul(a, b, out=out)


def _passing(output):
    from gpubench.families.check import CheckResult

    return CheckResult(True, 0.0, 0.0, 0, 0, output.numel(), 1e-5, 1e-5)


def forges_the_worker_check(a, b, out):
    """Gets past the worker's seal without changing a sealed binding: it shadows the
    tamper watch's `verdict` and the judge link's methods on their instances
    (found through gc; the watch's own instance is not watched), so the worker reports
    every output right, asks no one, and finds nothing changed. Writes zeros. Only a
    judge the worker does not hold can still fail it."""
    for obj in gc.get_objects():
        kind = type(obj)
        module = getattr(kind, "__module__", "")
        if not (isinstance(module, str) and module.startswith("gpubench")):
            continue
        if kind.__name__ == "Watch":
            obj.verdict = lambda executor: None
        elif kind.__name__ in ("RemoteJudge", "LocalJudge"):
            obj.check = lambda role, seed, output: _passing(output)
            obj.check_all = lambda role, outputs: [_passing(out) for _, out in outputs]
            obj.mutated = lambda seed, inputs: []
    out.zero_()


def kills_the_judge(a, b, out):
    """Kills the worker's child processes (the judge among them: it is forked from the
    worker), then forges the worker's check as forges_the_worker_check does and writes
    zeros: with the judge gone, no verdict can come from it."""
    import os
    import signal
    from pathlib import Path

    me = os.getpid()
    for task in Path(f"/proc/{me}/task").iterdir():
        for child in (task / "children").read_text().split():
            os.kill(int(child), signal.SIGKILL)
    forges_the_worker_check(a, b, out)

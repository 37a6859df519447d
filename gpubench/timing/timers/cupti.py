"""Mode `cupti`: kernel durations as CUPTI records them, through torch's Kineto profiler.

Each call runs inside a `record_function("gpubench::call")` range, after a
flush that lies outside it; the exported Chrome trace is read back and each
call's kernels (matched by correlation id, so the flush never counts) are
summed: a call launching several kernels is the sum of them. This is the
closest to ncu's gpu__time_duration that needs no extra tool, but each batch
pays the profiler's start/stop (~0.1 s), so batches are large.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable

from gpubench.timing.chrome_trace import CallWork, calls_named, load_trace
from gpubench.timing.timers.base import Measurement, sample_until_stopped
from gpubench.timing.timers.calls import TimedCalls, as_calls
from gpubench.timing.timers.flush_spin import CudaTimer

CALL_RANGE = "gpubench::call"
MAX_CALLS_PER_TRACE = 200


class CuptiTimer(CudaTimer):
    mode = "cupti"
    method = "CUPTI kernel durations (torch.profiler), summed per call, flush excluded"

    def measure(self, fn: Callable[[], object] | TimedCalls) -> Measurement:
        gpu, calls = self.support, as_calls(fn)

        warmup_calls, warmup_s = gpu.warm_up(calls, self.settings)
        kernels_per_call: list[int] = []

        def take(count: int) -> list[float]:
            work = self._profile(calls, max(count, self.settings.min_samples))
            kernels_per_call.extend(w.launches for w in work)
            return [w.device_us / 1e6 for w in work if w.launches]

        calls.sampling()  # one sample per call from here on
        samples, reason, spent = sample_until_stopped(take, self.settings)
        launches = sorted(kernels_per_call)[len(kernels_per_call) // 2] if kernels_per_call else 0
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                      {"launches_per_call": launches, **gpu.flush_details()})

    def _profile(self, calls: TimedCalls, count: int):
        gpu = self.support

        def prepare() -> None:
            calls.before()
            gpu.flush()

        return profile_calls(calls, min(count, MAX_CALLS_PER_TRACE), CALL_RANGE, prepare,
                             gpu.synchronize, finish=calls.after)


def profile_calls(fn: Callable[[], object], count: int, range_name: str,
                  prepare: Callable[[], None], synchronize: Callable[[], None],
                  finish: Callable[[], None] = lambda: None) -> list[CallWork]:
    """`count` calls under torch.profiler, each after `prepare()` (outside the range: a
    flush, a spin), inside `record_function(range_name)`, then `finish()` (outside it
    again); each call's device work, read back from the exported Chrome trace by
    correlation id. Shared by the cupti timer and the per-point kernel count
    (timers/device_work.py).

    torch.autograd.profiler's `profile` is the Kineto session torch.profiler's own wraps,
    CPU and CUDA activities alike, with the same Chrome trace; the wrapper's start also
    asks `hasattr(torch, "_inductor")` and imports torch.distributed, which import
    Inductor, Dynamo and sympy: 806 modules, 1.45 s in each worker's first profiled
    point on an H200 (torch 2.11, docs/journal/perf-notes.md), paid once per
    GPU by a run on several."""
    from torch.autograd.profiler import profile, record_function

    with profile(use_device="cuda", use_kineto=True) as prof:
        for _ in range(count):
            prepare()
            with record_function(range_name):
                fn()
            finish()
        synchronize()
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        prof.export_chrome_trace(path)
        return calls_named(load_trace(path), range_name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)

"""Modes `cold` and `warm`: a CUDA event pair around each call, launches queued behind a spin.

Per sample: before -> [flush (cold only)] -> spin -> start event -> call -> end event
-> after (timers/calls.py: the harness's hooks, outside the window).
While the GPU spins, the host enqueues start event, call and end event, so the
start event fires right before the call's first kernel and host launch latency
(5-40 us in Python) stays outside the window. Samples are queued in batches of
~20 ms and read after one synchronisation per batch. Each sample has the window's
fixed cost subtracted (the start event, fetching the first launch, the end
event): 2.0-2.2 us on an H200, fitted once per process on null kernels
(gpubench/timing/calibration.py), which would otherwise inflate every us-scale kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers.base import Measurement, sample_until_stopped
from gpubench.timing.timers.calls import TimedCalls, as_calls
from gpubench.timing.timers.flush_spin import CudaSupport, CudaTimer


class EventTimer(CudaTimer):
    def __init__(self, settings: TimingSettings, support: CudaSupport, flush: bool = True):
        super().__init__(settings, support)
        self.flush = flush
        self.mode = "cold" if flush else "warm"
        cache = "L2 flushed by reads" if flush else "warm L2 (no flush)"
        self.method = (f"cuda-events minus window cost (null-kernel fit), {cache}, "
                       "spin-queued launch")

    def measure(self, fn: Callable[[], object] | TimedCalls) -> Measurement:
        gpu, calls = self.support, as_calls(fn)
        prepare = gpu.flush if self.flush else (lambda: None)
        warmup_calls, warmup_s = gpu.warm_up(calls, self.settings, flush=self.flush)
        # The cost first: its first fit ramps the clocks and recalibrates the spin, which
        # the samples' spin must then be sized with.
        cost = gpu.window_cost()
        overhead_s = cost.fixed_s
        cycles, spin_us = gpu.spin_cycles(calls)

        def take(count: int) -> list[float]:
            events = [(gpu.event(), gpu.event()) for _ in range(count)]
            for begin, end in events:
                calls.before()
                prepare()
                gpu.spin(cycles)
                gpu.record(begin)
                calls()
                gpu.record(end)
                calls.after()
            gpu.synchronize()
            return [max(gpu.elapsed_s(begin, end) - overhead_s, 0.0)
                    for begin, end in events]

        calls.sampling()  # one sample per call from here on
        samples, reason, spent = sample_until_stopped(take, self.settings)
        details = {"spin_us": spin_us, **cost.to_details(),
                   **(gpu.flush_details() if self.flush else {"flush_bytes": 0})}
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                      details)

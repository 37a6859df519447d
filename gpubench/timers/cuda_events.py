"""Modes `cold` and `warm`: a CUDA event pair around each call, launches queued behind a spin.

Per sample: [flush (cold only)] -> spin -> start event -> call -> end event.
While the GPU spins, the host enqueues start event, call and end event, so the
start event fires right before the call's first kernel and host launch latency
(5-40 us in Python) stays outside the window. Samples are queued in batches of
~20 ms and read after one synchronisation per batch. Each sample has the window's
fixed cost subtracted (the start event, fetching the first launch, the end
event): 2.0-2.2 us on an H200, fitted on null-kernel windows queued with every
batch of samples (gpubench/calibration.py), which would otherwise inflate every
us-scale kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.calibration import NULL_KERNEL_COUNTS, WindowCost, window_cost
from gpubench.records.settings import TimingSettings
from gpubench.timers.base import Measurement, sample_until_stopped
from gpubench.timers.cuda_support import CudaSupport, CudaTimer, read_null_windows


class EventTimer(CudaTimer):
    def __init__(self, settings: TimingSettings, support: CudaSupport, flush: bool = True):
        super().__init__(settings, support)
        self.flush = flush
        self.mode = "cold" if flush else "warm"
        cache = "L2 flushed by reads" if flush else "warm L2 (no flush)"
        self.method = (f"cuda-events minus window cost (null-kernel fit), {cache}, "
                       "spin-queued launch")

    def measure(self, fn: Callable[[], object]) -> Measurement:
        gpu = self.support
        prepare = gpu.flush if self.flush else (lambda: None)
        warmup_calls, warmup_s = gpu.warm_up(fn, self.settings, flush=self.flush)
        cycles, spin_us = gpu.spin_cycles(fn)
        # Provisional: the process's fit, for the stopping rule while samples come in.
        provisional = gpu.window_cost()
        raw: list[float] = []
        null_marks: list = []

        def take(count: int) -> list[float]:
            events = [(gpu.event(), gpu.event()) for _ in range(count)]
            for begin, end in events:
                prepare()
                gpu.spin(cycles)
                begin.record()
                fn()
                end.record()
            null_marks.extend(gpu.queue_null_windows())  # ~0.5 ms a batch of ~20 ms
            gpu.synchronize()
            windows = [begin.elapsed_time(end) / 1e3 for begin, end in events]
            raw.extend(windows)
            return [max(w - provisional.fixed_s, 0.0) for w in windows]

        _, reason, spent = sample_until_stopped(take, self.settings)
        cost = self._final_cost(null_marks, provisional)
        samples = [max(w - cost.fixed_s, 0.0) for w in raw]
        details = {"spin_us": spin_us, **cost.to_details(),
                   "window_cost_process_us": provisional.fixed_s * 1e6,
                   "flush_bytes": gpu.flush_bytes if self.flush else 0}
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                           details)

    # Null windows per count for the measurement's own fit: batches that stop early get
    # topped up to this many (4 counts x 8 x ~110 us = 3.5 ms at most).
    MIN_NULL_WINDOWS = 8

    def _final_cost(self, null_marks: list, provisional: WindowCost) -> WindowCost:
        """The window cost fitted on null windows taken in this measurement's own batches,
        under the clocks and load its samples saw. With one fit per process, the first
        measurement of a 2.3 us add on an H200 read 0.77 us below the five after it (twice
        in two processes); the fixed cost is launch work, whose speed follows the SM clock.
        Falls back to the process's fit when this one is implausible."""
        gpu = self.support
        rounds = len(null_marks) // len(NULL_KERNEL_COUNTS)
        for _ in range(max(self.MIN_NULL_WINDOWS - rounds, 0)):
            null_marks.extend(gpu.queue_null_windows())
        gpu.synchronize()
        cost = window_cost(read_null_windows(null_marks), provisional.empty_pair_s)
        return cost if cost.null_kernel_s is not None else provisional

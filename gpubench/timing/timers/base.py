"""What all timers share: the warmup and the sampling loop. Each timer returns a
Measurement (gpubench/timing/measurement.py)."""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing import nvtx_ranges, pristine
from gpubench.timing.measurement import Measurement
from gpubench.timing.stopping import TimingSettings, next_batch_size, stop_reason

__all__ = ["Measurement", "sample_until_stopped", "warm_up"]


def sample_until_stopped(
    take: Callable[[int], list[float]],
    settings: TimingSettings,
    clock: Callable[[], float] = pristine.perf_counter,
) -> tuple[list[float], str, float]:
    """Call take(k) for batches of k samples until the stopping rule says stop.

    Returns (samples, stop reason, seconds spent). `take` may return fewer or
    more samples than asked (a CUPTI batch yields what the trace holds).
    """
    samples: list[float] = []
    start, per_sample = clock(), None
    while True:
        batch = take(next_batch_size(per_sample, len(samples), settings))
        if not batch:
            raise RuntimeError("the timer produced no samples")
        samples.extend(batch)
        elapsed = clock() - start
        per_sample = elapsed / len(samples)
        reason = stop_reason(samples, elapsed, settings)
        if reason:
            return samples, reason, elapsed


def warm_up(call: Callable[[], object], settings: TimingSettings,
            synchronize: Callable[[], None] = lambda: None,
            clock: Callable[[], float] = pristine.perf_counter) -> tuple[int, float]:
    """Call until the warmup budget is spent (twice at least), in doubling batches."""
    calls, start, batch = 0, clock(), 1
    with nvtx_ranges.phase("warmup"):
        while calls < 2 or clock() - start < settings.warmup_s:
            for _ in range(batch):
                call()
            synchronize()
            calls += batch
            batch = min(batch * 2, 256)
    return calls, clock() - start

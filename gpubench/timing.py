"""Timers: how one call of a variant becomes a list of time samples.

Every timer has one method, `measure(fn) -> Timing`, and a `method` string that
travels with every result so a number always says how it was obtained. The
runner knows nothing else about timing; a fuller engine replaces these classes
without touching it.

CudaColdTimer, the GPU default, follows ../shared/docs/MEASUREMENT.md:
- L2 is flushed before every sample by *reading* a buffer of twice the L2 size
  (a write flush leaves dirty lines that the timed kernel must write back:
  +9-19% on memory-bound kernels in that note);
- each sample's launches are queued behind a short spin kernel
  (torch.cuda._sleep), so the start event fires when the GPU reaches it, not
  when the host gets round to launching: host launch latency (5-40 us) stays
  outside the event window;
- samples are taken in batches between synchronisations until a time budget
  is spent and a minimum count is reached.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingSettings:
    """How long to warm up and to sample. Defaults keep one point near 1 s of wall time."""

    # 100 ms of warmup: the H100 goes from 345 MHz idle to 1980 MHz within a few
    # ms of load; the rest covers autotuning, lazy module loading and allocator growth.
    warmup_s: float = 0.1
    # 400 ms of sampling: at ~60 us per sample (flush + spin + kernel) that is
    # thousands of samples for a us-scale kernel and >= 5 for a 50 ms one.
    budget_s: float = 0.4
    min_samples: int = 5
    max_samples: int = 5000
    flush_l2: bool = True


@dataclass
class Timing:
    """Raw samples (seconds) and how they were taken."""

    samples_s: list[float]
    method: str
    warmup_calls: int
    warmup_s: float
    stop_reason: str
    details: dict = field(default_factory=dict)


def _stop_reason(count: int, elapsed: float, settings: TimingSettings) -> str | None:
    """Why sampling stops now, or None to go on."""
    if count >= settings.max_samples:
        return "max_samples"
    if count >= settings.min_samples and elapsed >= settings.budget_s:
        return "budget"
    return None


class HostTimer:
    """Host clock around each call; for CPU tensors, where every call is synchronous."""

    method = "host-clock (CPU; no cache flush)"

    def __init__(self, settings: TimingSettings, clock: Callable[[], float] = time.perf_counter):
        self.settings, self.clock = settings, clock

    def measure(self, fn: Callable[[], object]) -> Timing:
        warmup_calls, start = 0, self.clock()
        while warmup_calls == 0 or self.clock() - start < self.settings.warmup_s:
            fn()
            warmup_calls += 1
        warmup_s = self.clock() - start
        samples: list[float] = []
        start = self.clock()
        while True:
            t0 = self.clock()
            fn()
            samples.append(self.clock() - t0)
            reason = _stop_reason(len(samples), self.clock() - start, self.settings)
            if reason:
                return Timing(samples, self.method, warmup_calls, warmup_s, reason)


class CudaColdTimer:
    """CUDA events around each call, L2 flushed by reads, launches queued behind a spin."""

    method = "cuda-events cold-L2 (read flush, spin-queued launch)"

    # Reading 2x L2 evicts everything an LRU-ish cache held before (50 MB L2 on
    # H100, 60 MB on H200 -> 100-120 MB read, ~35 us at 3 TB/s).
    FLUSH_FACTOR = 2
    # The spin must outlast the host's work of enqueueing start event, call and
    # end event; 2x the measured enqueue time, never under 20 us.
    SPIN_MARGIN = 2.0
    MIN_SPIN_US = 20.0
    MAX_SPIN_US = 2000.0
    # Synchronise every ~20 ms of queued samples to check the budget.
    BATCH_S = 0.02

    def __init__(self, settings: TimingSettings):
        import torch

        self.torch = torch
        self.settings = settings
        if not settings.flush_l2:
            self.method = "cuda-events warm-L2 (no flush, spin-queued launch)"
        l2_bytes = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.flush_bytes = self.FLUSH_FACTOR * max(l2_bytes, 1 << 20)
        self._flush_buffer = torch.ones(self.flush_bytes // 4, dtype=torch.float32, device="cuda")
        self._flush_sink = torch.empty((), dtype=torch.float32, device="cuda")
        self._cycles_per_us: float | None = None

    def flush(self) -> None:
        """Read the whole flush buffer (a sum), leaving L2 full of clean, unrelated lines."""
        if self.settings.flush_l2:
            self.torch.sum(self._flush_buffer, dim=0, out=self._flush_sink)

    def measure(self, fn: Callable[[], object]) -> Timing:
        torch = self.torch
        warmup_calls, warmup_s = self._warmup(fn)
        spin_us = self._spin_us(fn)
        cycles = int(spin_us * self._spin_cycles_per_us())
        samples: list[float] = []
        start, per_sample = time.perf_counter(), None
        while True:
            batch = self._batch_size(per_sample, len(samples))
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(batch)]
            for begin, end in events:
                self.flush()
                torch.cuda._sleep(cycles)
                begin.record()
                fn()
                end.record()
            torch.cuda.synchronize()
            samples.extend(begin.elapsed_time(end) / 1e3 for begin, end in events)
            elapsed = time.perf_counter() - start
            per_sample = elapsed / len(samples)
            reason = _stop_reason(len(samples), elapsed, self.settings)
            if reason:
                details = {"spin_us": spin_us, "flush_bytes": self.flush_bytes if
                           self.settings.flush_l2 else 0}
                return Timing(samples, self.method, warmup_calls, warmup_s, reason, details)

    def _warmup(self, fn: Callable[[], object]) -> tuple[int, float]:
        """Call until the warmup budget is spent (at least twice), synchronising per batch."""
        torch = self.torch
        calls, start, batch = 0, time.perf_counter(), 1
        while calls < 2 or time.perf_counter() - start < self.settings.warmup_s:
            for _ in range(batch):
                self.flush()
                fn()
            torch.cuda.synchronize()
            calls += batch
            batch = min(batch * 2, 256)
        return calls, time.perf_counter() - start

    def _spin_us(self, fn: Callable[[], object]) -> float:
        """How long the GPU must be kept busy while the host enqueues one sample."""
        torch = self.torch
        enqueue = []
        for _ in range(5):
            torch.cuda.synchronize()
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            begin.record()
            fn()
            end.record()
            enqueue.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        typical = sorted(enqueue)[len(enqueue) // 2]
        return min(max(self.SPIN_MARGIN * typical, self.MIN_SPIN_US), self.MAX_SPIN_US)

    def _spin_cycles_per_us(self) -> float:
        """Calibrate torch.cuda._sleep (it counts clock cycles) against events, once."""
        if self._cycles_per_us is None:
            torch = self.torch
            cycles = 1_000_000
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            torch.cuda._sleep(cycles)
            end.record()
            torch.cuda.synchronize()
            self._cycles_per_us = cycles / max(begin.elapsed_time(end) * 1e3, 1e-3)
        return self._cycles_per_us

    def _batch_size(self, per_sample_s: float | None, taken: int) -> int:
        if per_sample_s is None:
            return max(self.settings.min_samples, 1)
        wanted = int(self.BATCH_S / max(per_sample_s, 1e-7))
        return max(1, min(wanted, self.settings.max_samples - taken, 1000))


def make_timer(device: str, settings: TimingSettings):
    """The default timer for a device: cold-L2 CUDA events on GPUs, the host clock on CPUs."""
    return CudaColdTimer(settings) if device == "cuda" else HostTimer(settings)

"""GPU-side helpers every CUDA timer needs: the L2 flush, the spin, events.

One instance per worker process: the flush buffer (2x L2) is allocated once
and the spin kernel's clock rate is calibrated once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpubench.records.settings import TimingSettings
from gpubench.timers.base import warm_up


class CudaSupport:
    # Reading 2x L2 evicts everything an LRU-ish cache held before (50 MB L2 on
    # H100, 60 MB on H200 -> 100-120 MB read, ~35-40 us at 3 TB/s).
    FLUSH_FACTOR = 2
    # The spin must outlast the host's work of enqueueing start event, call and
    # end event; 2x the measured enqueue time, never under 20 us, never over 2 ms.
    SPIN_MARGIN = 2.0
    MIN_SPIN_US = 20.0
    MAX_SPIN_US = 2000.0

    def __init__(self):
        import torch

        self.torch = torch
        device = torch.cuda.current_device()
        l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
        self.flush_bytes = self.FLUSH_FACTOR * max(l2_bytes, 1 << 20)
        self._flush_buffer = torch.ones(self.flush_bytes // 4, dtype=torch.float32, device="cuda")
        self._flush_sink = torch.empty((), dtype=torch.float32, device="cuda")
        self._cycles_per_us: float | None = None
        self._event_overhead: float | None = None

    def flush(self) -> None:
        """Read the whole flush buffer (a sum): L2 ends full of clean, unrelated lines.
        A write flush (what do_bench does) leaves dirty lines the timed kernel must
        write back: +9-19% on memory-bound kernels (docs/measurement.md)."""
        self.torch.sum(self._flush_buffer, dim=0, out=self._flush_sink)

    def warm_up(self, fn: Callable[[], object], settings: TimingSettings,
                flush: bool = True) -> tuple[int, float]:
        """Warm up as the samples will run (flush, call), then recalibrate the spin:
        the clocks have ramped meanwhile. Returns (calls, seconds)."""
        prepare = self.flush if flush else (lambda: None)

        def call() -> None:
            prepare()
            fn()

        result = warm_up(call, settings, self.synchronize)
        self.recalibrate()
        return result

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def spin(self, cycles: int) -> None:
        self.torch.cuda._sleep(cycles)

    def spin_cycles(self, fn: Callable[[], object]) -> tuple[int, float]:
        """(cycles, microseconds) of spin that cover the host enqueueing one sample of fn."""
        enqueue = []
        for _ in range(5):
            self.synchronize()
            begin, end = self.event(), self.event()
            start = time.perf_counter()
            begin.record()
            fn()
            end.record()
            enqueue.append((time.perf_counter() - start) * 1e6)
        self.synchronize()
        typical = sorted(enqueue)[len(enqueue) // 2]
        spin_us = min(max(self.SPIN_MARGIN * typical, self.MIN_SPIN_US), self.MAX_SPIN_US)
        return int(spin_us * self._spin_cycles_per_us()), spin_us

    def recalibrate(self) -> None:
        """Forget the spin calibration: clocks may have ramped since (call after warmup)."""
        self._cycles_per_us = None

    def _spin_cycles_per_us(self) -> float:
        """Calibrate torch.cuda._sleep, which counts clock cycles, against events."""
        if self._cycles_per_us is None:
            cycles = 1_000_000
            begin, end = self.event(), self.event()
            begin.record()
            self.spin(cycles)
            end.record()
            self.synchronize()
            self._cycles_per_us = cycles / max(begin.elapsed_time(end) * 1e3, 1e-3)
        return self._cycles_per_us

    # An empty pair costing more than this was not measured behind the spin (the
    # host fell behind): subtracting it would understate kernels, so nothing is.
    MAX_EVENT_OVERHEAD_S = 3e-6

    def event_overhead_s(self) -> float:
        """What an event pair with nothing between it measures behind a spin.

        On an H100 this is 1.25 us (2026-11-22, docs/perf-notes.md): a fixed cost
        every event-timed sample carries, which made 3-60 us kernels read 1.5-1.8
        us long against ncu. Cold and warm samples subtract it. Measured with a
        100 us spin per pair, so the host is always ahead, even if the spin's
        clock calibration ran at idle clocks; kept once a plausible value is seen,
        so repeated measurements subtract the same amount.
        """
        if self._event_overhead is not None:
            return self._event_overhead
        cycles = int(100 * self._spin_cycles_per_us())
        pairs = [(self.event(), self.event()) for _ in range(100)]
        for begin, end in pairs:
            self.spin(cycles)
            begin.record()
            end.record()
        self.synchronize()
        values = sorted(begin.elapsed_time(end) / 1e3 for begin, end in pairs)
        overhead = values[len(values) // 2]
        if overhead > self.MAX_EVENT_OVERHEAD_S:
            return 0.0  # implausible: measured again at the next measurement
        self._event_overhead = overhead  # a fixed cost of the hardware: kept once known
        return overhead


class CudaTimer:
    """Base of the GPU timers: settings and the process's CudaSupport."""

    def __init__(self, settings: TimingSettings, support: CudaSupport):
        self.settings, self.support = settings, support

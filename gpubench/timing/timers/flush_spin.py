"""What every CUDA timer shares: the L2 flush, the spin that queues launches, events, and
the window's fixed cost (CudaSupport).

One instance per worker process: the flush buffer (2x L2) is allocated once
and the spin kernel's clock rate is calibrated once. Events, their records and
elapsed times, synchronisation, the spin and the host clock go through the
references captured when the worker started (gpubench/timing/pristine.py), never
through names a variant could have rebound since.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing import pristine
from gpubench.timing.calibration import NULL_KERNEL_COUNTS, WindowCost, settled_fit, window_cost
from gpubench.timing.persisting_l2 import PersistingL2
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers.base import warm_up
from gpubench.timing.timers.calls import TimedCalls, as_calls


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
        self._window_cost: WindowCost | None = None
        self.persisting_l2 = PersistingL2()

    def flush(self) -> None:
        """Read the whole flush buffer (a sum): L2 ends full of clean, unrelated lines.
        A write flush (what do_bench does) leaves dirty lines the timed kernel must
        write back: +9-19% on memory-bound kernels (docs/measurement.md, "Cold mode").
        Lines a variant marked persisting would survive the read, so they are returned
        to normal first (persisting_l2.py; a ~1 us host query when nothing was reserved)."""
        self.persisting_l2.reset_if_reserved()
        self.torch.sum(self._flush_buffer, dim=0, out=self._flush_sink)

    def flush_details(self) -> dict:
        """What the flush did, for a measurement's details: its size and how many flushes
        so far had to reset persisting L2 lines a variant reserved."""
        return {"flush_bytes": self.flush_bytes,
                "persisting_l2_resets": self.persisting_l2.resets}

    def warm_up(self, calls: TimedCalls, settings: TimingSettings,
                flush: bool = True) -> tuple[int, float]:
        """Warm up as the samples will run (before, flush, call, after), then recalibrate
        the spin: the clocks have ramped meanwhile. Returns (calls, seconds)."""
        prepare = self.flush if flush else (lambda: None)

        def call() -> None:
            calls.before()
            prepare()
            calls()
            calls.after()

        result = warm_up(call, settings, self.synchronize)
        self.recalibrate()
        return result

    def capture(self, body: Callable[[], object], keep_graph: bool = False,
                eager: Callable[[], object] | None = None):
        """`body` captured into a CUDA graph, after a warmup on the capture's side stream
        (cuBLAS and friends set up workspaces on first use, which capture forbids): `eager`
        there when given, else `body` itself. With keep_graph the raw graph stays readable
        (raw_cuda_graph) and nothing is replayed; otherwise the graph is replayed once, so
        its first replay is not timed."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            (eager or body)()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph(keep_graph=True) if keep_graph else torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        if not keep_graph:
            graph.replay()
        self.synchronize()
        return graph

    def synchronize(self) -> None:
        pristine.synchronize()

    def event(self):
        """A timing event made by the captured constructor."""
        return pristine.timing_event()

    @staticmethod
    def record(event) -> None:
        """Record `event` on the current stream by the captured C-level method."""
        pristine.record(event)

    @staticmethod
    def elapsed_s(begin, end) -> float:
        """Seconds between two recorded events by the captured C-level elapsed_time
        (event.elapsed_time is a Python method a variant can replace)."""
        return pristine.elapsed_s(begin, end)

    def spin(self, cycles: int) -> None:
        pristine.cuda_sleep(cycles)

    def spin_cycles(self, fn: Callable[[], object] | TimedCalls) -> tuple[int, float]:
        """(cycles, microseconds) of spin that cover the host enqueueing one sample of fn."""
        calls = as_calls(fn)
        enqueue = []
        for _ in range(5):
            calls.before()
            self.synchronize()
            begin, end = self.event(), self.event()
            start = pristine.perf_counter()
            self.record(begin)
            calls()
            self.record(end)
            enqueue.append((pristine.perf_counter() - start) * 1e6)
            calls.after()
        self.synchronize()
        typical = sorted(enqueue)[len(enqueue) // 2]
        spin_us = min(max(self.SPIN_MARGIN * typical, self.MIN_SPIN_US), self.MAX_SPIN_US)
        return int(spin_us * self._spin_cycles_per_us()), spin_us

    def spin_for_us(self, microseconds: float) -> None:
        """Keep the stream busy for about `microseconds` (clock-calibrated spin)."""
        self.spin(int(microseconds * self._spin_cycles_per_us()))

    def recalibrate(self) -> None:
        """Forget the spin calibration: clocks may have ramped since (call after warmup)."""
        self._cycles_per_us = None

    def _spin_cycles_per_us(self) -> float:
        """Calibrate torch.cuda._sleep, which counts clock cycles, against events."""
        if self._cycles_per_us is None:
            cycles = 1_000_000
            begin, end = self.event(), self.event()
            self.record(begin)
            self.spin(cycles)
            self.record(end)
            self.synchronize()
            self._cycles_per_us = cycles / max(self.elapsed_s(begin, end) * 1e6, 1e-3)
        return self._cycles_per_us

    # An empty pair costing more than this was not measured behind the spin (the
    # host fell behind): subtracting it would understate kernels, so nothing is.
    MAX_EVENT_OVERHEAD_S = 3e-6
    # Windows per null-kernel count in the fit: 4 counts x 40 windows x ~110 us = ~18 ms.
    WINDOWS_PER_COUNT = 40

    def window_cost(self) -> WindowCost:
        """The fixed cost of a cold sample's event window, fitted once per process on
        null kernels (gpubench/timing/calibration.py says how and why). Each window sits behind
        a 100 us spin, so the host is always ahead, even if the spin's clock calibration
        ran at idle clocks; the counts are interleaved so a clock change in the middle
        moves all of them alike. Fitted again until two fits in a row agree (calibration.
        settled_fit), then kept, so repeated measurements subtract the same amount."""
        if self._window_cost is not None:
            return self._window_cost
        fits: list[WindowCost] = []
        while (kept := settled_fit(fits)) is None:
            fits.append(self._fit_window_cost())
        if kept.null_kernel_s is not None:
            self._window_cost = kept  # a fixed cost of the hardware: kept once known
        return kept

    def _fit_window_cost(self) -> WindowCost:
        self._ramp_clocks()
        cycles = int(100 * self._spin_cycles_per_us())
        empty = self._median_windows(cycles, 0, self.WINDOWS_PER_COUNT * 2)
        empty_s = empty if empty <= self.MAX_EVENT_OVERHEAD_S else None
        windows: dict[int, list[float]] = {n: [] for n in NULL_KERNEL_COUNTS}
        marks = []
        for _ in range(self.WINDOWS_PER_COUNT):
            for count in NULL_KERNEL_COUNTS:
                marks.append((count, *self._window(cycles, count)))
        self.synchronize()
        for count, begin, end in marks:
            windows[count].append(self.elapsed_s(begin, end))
        return window_cost(windows, empty_s)

    # Busy time before the fit. A GPU idles at a fraction of its clock (345 of 1980 MHz on an
    # H200) and a warmup of tiny kernels may not lift it: on a fresh H200 the fit once ran
    # with null kernels at 4 us instead of 1.4 and subtracted 6.8 us. Clocks ramp within a
    # few ms of steady load; 50 ms of spin, timed on the host, leaves no doubt.
    RAMP_S = 0.05

    def _ramp_clocks(self) -> None:
        """Keep the GPU spinning for RAMP_S of host time, then recalibrate the spin."""
        start = pristine.perf_counter()
        while pristine.perf_counter() - start < self.RAMP_S:
            self.spin(int(2000 * self._spin_cycles_per_us()))  # ~2 ms per call at most
            self.synchronize()
        self.recalibrate()

    def _window(self, cycles: int, null_kernels: int):
        begin, end = self.event(), self.event()
        self.spin(cycles)
        self.record(begin)
        for _ in range(null_kernels):
            self.spin(0)
        self.record(end)
        return begin, end

    def _median_windows(self, cycles: int, null_kernels: int, count: int) -> float:
        pairs = [self._window(cycles, null_kernels) for _ in range(count)]
        self.synchronize()
        values = sorted(self.elapsed_s(begin, end) for begin, end in pairs)
        return values[len(values) // 2]


class CudaTimer:
    """Base of the GPU timers: settings and the process's CudaSupport."""

    def __init__(self, settings: TimingSettings, support: CudaSupport):
        self.settings, self.support = settings, support

"""Watching the GPU's clocks while it is measured (NVML, through nvidia-ml-py).

A background thread polls the SM clock, temperature and the "clocks event"
(throttle) reasons every 10 ms during a measurement. The summary says whether
the numbers were taken at full speed: a thermal or hardware slowdown makes a
sample slow for reasons that have nothing to do with the kernel.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass

from gpubench.codec import Record

# NVML clocks-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*).
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# Reasons that slow a kernel down for reasons outside it: worth a re-measurement.
SLOWDOWN_BITS = 0x8 | 0x20 | 0x40 | 0x80
# The power cap is normal under heavy load (large bf16 matmuls run at the cap):
# recorded and flagged, but no reason to re-measure.
POWER_CAP_BIT = 0x4
POLL_S = 0.01


@dataclass(frozen=True)
class ClockReport(Record):
    """What NVML saw of the GPU's clocks while a mode was timed (one per Measurement)."""

    DERIVED = ("reasons", "slowed_down", "power_capped")

    polls: int = 0
    sm_mhz_min: int | None = None
    sm_mhz_max: int | None = None
    sm_mhz_max_possible: int | None = None
    temperature_c_max: int | None = None
    reasons_mask: int = 0
    remeasured: bool = False  # timed again after a slowdown (--remeasure-throttled)

    @property
    def reasons(self) -> list[str]:
        return reason_names(self.reasons_mask)

    @property
    def slowed_down(self) -> bool:
        """Thermal or hardware slowdown during the measurement: numbers not trustworthy."""
        return bool(self.reasons_mask & SLOWDOWN_BITS)

    @property
    def power_capped(self) -> bool:
        return bool(self.reasons_mask & POWER_CAP_BIT)


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit]


def summarize_polls(polls: list[tuple[int, int, int]], max_possible: int | None) -> ClockReport:
    """(sm_mhz, temperature_c, reasons_mask) polls -> one report. Pure."""
    clocks = [p[0] for p in polls if p[0] is not None]
    temperatures = [p[1] for p in polls if p[1] is not None]
    mask = 0
    for poll in polls:
        mask |= poll[2] or 0
    mask &= ~0x1  # "idle" shows between batches; it says nothing about the samples
    return ClockReport(len(polls), min(clocks, default=None), max(clocks, default=None),
                       max_possible, max(temperatures, default=None), mask)


class ClockMonitor:
    """Context manager polling NVML in a thread; `.report` once it exits. A no-op without NVML."""

    def __init__(self, uuid: str = ""):
        self.uuid = uuid
        self.polls: list[tuple[int, int, int]] = []
        self.report: ClockReport | None = None
        self._stop = threading.Event()
        self._nvml = self._open()

    def __enter__(self):
        if self._nvml is not None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="gpubench-clocks")
            self._thread.gpubench_owned = True  # not a variant's: the worker's thread check
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._nvml is None:
            return
        self._stop.set()
        self._thread.join(timeout=1)
        pynvml, handle = self._nvml
        try:
            max_possible = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        except Exception:
            max_possible = None
        self.report = summarize_polls(self.polls, max_possible)

    def _open(self):
        try:
            import pynvml

            from gpubench.timing.envinfo import _nvml_handle

            pynvml.nvmlInit()
            return pynvml, _nvml_handle(pynvml, self.uuid)
        except Exception:
            return None

    def _run(self) -> None:
        pynvml, handle = self._nvml
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        while not self._stop.is_set():
            try:
                self.polls.append((
                    pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                    reasons(handle),
                ))
            except Exception:
                return
            time.sleep(POLL_S)


def measure_watched(timer, call, watch_clocks: bool, uuid: str = ""):
    """`timer.measure(call)` with the GPU's clocks watched meanwhile (on a GPU): the one
    measuring step of `gpubench run` (in its worker) and `gpubench.measure()` (in the
    caller's process). Returns the Measurement and the ClockReport (None without one: on
    a CPU, or without NVML)."""
    watch = ClockMonitor(uuid) if watch_clocks else None
    with watch or contextlib.nullcontext():
        timing = timer.measure(call)
    return timing, getattr(watch, "report", None)

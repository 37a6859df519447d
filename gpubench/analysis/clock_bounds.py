"""How much slower a point may have run for its GPU clocks alone (pure): a kernel's time
scales at most as 1 / clock, so a run that saw throttling or a power cap allows that much
change before `compare` calls it one (analysis/comparison.py)."""

from __future__ import annotations

from gpubench.timing.clocks import ClockReport


def clock_allowance(clocks: ClockReport | None) -> float:
    """How much slower the point may have run for its clocks alone: a kernel's time scales
    at most as 1 / clock, so max_possible / min - 1, when the run saw throttling or a
    power cap (0 otherwise: a clock that stayed up explains nothing)."""
    if not clocks or not (clocks.slowed_down or clocks.power_capped):
        return 0.0
    low, top = clocks.sm_mhz_min, clocks.sm_mhz_max_possible
    if not low or not top or low >= top:
        return 0.0
    return top / low - 1.0


def _clock_state(clocks: ClockReport | None) -> str:
    if not clocks:
        return ""
    if clocks.slowed_down:
        return "throttled"
    return "power-capped" if clocks.power_capped else ""


def clock_bound(base, new) -> tuple[float, str]:
    """The larger clock allowance of the two runs, and which run and clock it comes from."""
    bounds = []
    for label, result in (("BASE", base), ("NEW", new)):
        clocks = result.measurement.clocks if result.measurement else None
        note = (f"{_clock_state(clocks)} in {label} (SM down to {clocks.sm_mhz_min} MHz)"
                if clocks else "")
        bounds.append((clock_allowance(clocks), note))
    return max(bounds, key=lambda bound: bound[0])

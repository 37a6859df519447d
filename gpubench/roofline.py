"""Rates from a cost model and a time: TFLOP/s, GB/s, speedup. Pure arithmetic.

The cost model is the family's napkin math: FLOPs of one call and the fewest
bytes one call must move (each input read once, each output written once).
GB/s here is therefore "useful bytes per second": a kernel that re-reads its
inputs moves more than this and shows as less efficient, which is the point.
"""

from __future__ import annotations


def tflops(flops: float, seconds: float) -> float | None:
    """Useful FLOPs per second, in 10^12 (None when the time is unknown)."""
    if not seconds or seconds <= 0 or flops is None:
        return None
    return flops / seconds / 1e12


def gbps(bytes_moved: float, seconds: float) -> float | None:
    """Useful bytes per second, in 10^9 (decimal GB, as vendors quote bandwidth)."""
    if not seconds or seconds <= 0 or bytes_moved is None:
        return None
    return bytes_moved / seconds / 1e9


def arithmetic_intensity(flops: float, bytes_moved: float) -> float | None:
    """FLOPs per byte of the cost model: where the kernel sits on the roofline's x-axis."""
    if not bytes_moved:
        return None
    return flops / bytes_moved


def speedup(baseline_seconds: float | None, seconds: float | None) -> float | None:
    """How many times faster than the baseline (>1 is faster)."""
    if not baseline_seconds or not seconds or seconds <= 0:
        return None
    return baseline_seconds / seconds

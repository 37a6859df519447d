"""Rates from a cost model and a time: TFLOP/s, GB/s, speedup. Pure arithmetic.

The cost model is the family's napkin math: FLOPs of one call and the fewest
bytes one call must move (each input read once, each output written once).
GB/s here is therefore "useful bytes per second": a kernel that re-reads its
inputs moves more than this and shows as less efficient, which is the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpubench.codec import Record


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


@dataclass(frozen=True)
class RoofPosition(Record):
    """Where a measurement sits under the roofline: which roof bounds it (memory or
    compute), its arithmetic intensity and the ridge point (FLOP/byte), and `fraction`,
    achieved over roof. `compute` names the precision whose peak the compute roof is
    ("tf32"), `bandwidth_gbps` the memory roof at the row's footprint (verdicts/derive.py)."""

    bound: str
    fraction: float
    intensity: float = math.nan
    ridge: float = math.nan
    compute: str | None = None
    bandwidth_gbps: float | None = None


def position(flops: float, bytes_moved: float, seconds: float | None, bandwidth_gbps: float,
             peak_tflops: float) -> RoofPosition | None:
    """Where a measurement sits under this machine's roofline.

    The ridge point is peak FLOP/s over bandwidth (about 17 FLOP/byte for fp32
    on an H100: 51 TFLOP/s over 3 TB/s). Below it a kernel is memory-bound and
    its roof is bandwidth x intensity; above it the roof is the peak rate.
    `fraction` is achieved over roof: 1.0 means at the measured ceiling.
    """
    if not seconds or seconds <= 0 or not bandwidth_gbps or not peak_tflops or not bytes_moved:
        return None
    intensity = arithmetic_intensity(flops or 0.0, bytes_moved)
    ridge = peak_tflops * 1e12 / (bandwidth_gbps * 1e9)
    if intensity < ridge:
        return RoofPosition("memory", bytes_moved / seconds / (bandwidth_gbps * 1e9),
                            intensity, ridge)
    return RoofPosition("compute", flops / seconds / (peak_tflops * 1e12), intensity, ridge)

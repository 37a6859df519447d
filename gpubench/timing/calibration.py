"""What an event window holds beyond the kernels in it, fitted on the machine it runs on.

A cold sample is the time between two CUDA events around one call, with the
launches queued behind a spin. That window holds the call's kernels and a fixed
cost of its own: the front end recording the start event, fetching the first
launch, and signalling the end event. ncu's `gpu__time_duration` holds only the
kernels, so the fixed cost has to come off, and it differs between GPUs and
drivers (measured below), so it is measured where gpubench runs, not tuned once.

How: windows around N back-to-back *null* kernels (`torch.cuda._sleep(0)`, a
kernel that returns at once), N = 1, 2, 4, 8, behind a spin. The window grows by
one null kernel's cost per kernel, so a straight line through the points has
the null kernel's cost as its slope and the window's fixed cost as its
intercept. The slope is a check: it matches ncu's duration of the null kernel
(1.33-1.40 us against ncu's 1.34-1.38 us on an H200,
docs/measurement.md "The window's fixed cost").

Why not the empty event pair (what cold subtracted before issue 11): two events
with nothing between them skip the launch of a kernel. On an H100 it happened to
land on ncu (1.25 us); on an H200 the empty pair is 1.28 us while the window's
fixed cost is 2.0-2.2 us, and 3-20 us kernels read 12-19% above ncu.

Pure arithmetic: the timer takes the windows, this module fits them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

# Null kernels per window for the fit. Powers of two to 8: long enough a line to fit a
# slope (8 x ~1.4 us = 11 us against ~0.03 us event resolution), short enough that the
# host enqueues a window well inside the spin that precedes it.
NULL_KERNEL_COUNTS = (1, 2, 4, 8)
# A fixed cost outside this range is not a property of the hardware but a host that fell
# behind the spin (or a broken event): then nothing beyond the empty pair is subtracted.
MIN_PLAUSIBLE_S = 0.0
MAX_PLAUSIBLE_S = 10e-6
# A fit is kept once two in a row agree within this (slope and fixed cost, relative): two
# fits of one GPU at steady clocks differ by a few %, the slopes of 2 and 4 H200s' workers
# by at most 11% between GPUs (1.46-1.62 us); a fit at a clock still ramping
# is 2-4x off. At most MAX_FITS fits (~70 ms each with its ramp).
AGREEMENT = 0.10
MAX_FITS = 4


@dataclass(frozen=True)
class WindowCost:
    """The fixed cost of a cold sample's event window, and how it was found."""

    fixed_s: float  # subtracted from every cold and warm sample
    null_kernel_s: float | None  # the fit's slope: one null kernel back to back
    empty_pair_s: float | None  # two events with nothing between (the pre-issue-11 correction)
    method: str  # "null-kernel fit" or "empty pair (fit implausible: ...)"
    points: tuple[tuple[int, float], ...] = ()  # (null kernels, median window s)
    fits: int = 1  # fits taken until two agreed (settled_fit)

    def to_details(self) -> dict:
        """For Measurement.details, in microseconds like the other timer details."""
        return {
            "window_cost_us": self.fixed_s * 1e6,
            "null_kernel_us": None if self.null_kernel_s is None else self.null_kernel_s * 1e6,
            "empty_pair_us": None if self.empty_pair_s is None else self.empty_pair_s * 1e6,
            "window_cost_method": self.method,
            "window_cost_points": [[n, s * 1e6] for n, s in self.points],
            "window_cost_fits": self.fits,
        }


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y = a + b*x; needs two distinct x."""
    if len({x for x, _ in points}) < 2:
        raise ValueError("a line needs points at two different x at least")
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in points)
             / sum((x - mean_x) ** 2 for x, _ in points))
    return mean_y - slope * mean_x, slope


def window_cost(windows: dict[int, Sequence[float]], empty_pair_s: float | None) -> WindowCost:
    """The fixed cost from windows (seconds) keyed by the number of null kernels in them.

    Each count's median enters the fit, so a few windows delayed by the host do not
    move it. An implausible fit (negative slope, intercept outside 0-10 us) falls back
    to the empty pair, and says so in `method`.
    """
    points = tuple(sorted((n, statistics.median(v)) for n, v in windows.items() if v))
    try:
        intercept, slope = fit_line(points)
    except ValueError as exc:
        return _fallback(empty_pair_s, points, str(exc))
    if slope <= 0 or not MIN_PLAUSIBLE_S < intercept < MAX_PLAUSIBLE_S:
        why = f"intercept {intercept * 1e6:.2f} us, slope {slope * 1e6:.2f} us"
        return _fallback(empty_pair_s, points, why)
    return WindowCost(intercept, slope, empty_pair_s, "null-kernel fit", points)


def _fallback(empty_pair_s: float | None, points, why: str) -> WindowCost:
    return WindowCost(empty_pair_s or 0.0, None, empty_pair_s,
                      f"empty pair (fit implausible: {why})", points)


def settled_fit(fits: Sequence[WindowCost]) -> WindowCost | None:
    """The fit to keep from the fits so far, or None while another is needed.

    One fit alone may be taken at a clock that has not ramped (on an H200: null kernels at
    5.75 us instead of 1.55, a fixed cost of 8.16 us instead of 2.9, and every launch-bound
    point of that worker at 0 ns and SUSPECT; docs/journal/perf-notes.md). A slower clock makes
    both larger, so the last of two plausible fits that agree is kept; where MAX_FITS
    never agree, the one with the fastest null kernel (or the last fallback)."""
    if len(fits) >= 2 and _agree(fits[-2], fits[-1]):
        return replace(fits[-1], fits=len(fits))
    if len(fits) < MAX_FITS:
        return None
    plausible = [f for f in fits if f.null_kernel_s is not None]
    if not plausible:
        return replace(fits[-1], fits=len(fits))
    fastest = min(plausible, key=lambda f: f.null_kernel_s)
    return replace(fastest, fits=len(fits), method=f"{fastest.method} (the fastest of "
                                                   f"{len(fits)} fits that disagreed)")


def _agree(first: WindowCost, second: WindowCost) -> bool:
    if first.null_kernel_s is None or second.null_kernel_s is None:
        return False
    return (abs(first.null_kernel_s - second.null_kernel_s) <= AGREEMENT * second.null_kernel_s
            and abs(first.fixed_s - second.fixed_s) <= AGREEMENT * second.fixed_s)

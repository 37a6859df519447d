"""The memory roof at a row's footprint: copy bandwidth as a function of bytes moved. Pure.

One large copy (1 GiB, 20x the L2) gives the bandwidth of HBM, but not the roof of a
kernel whose footprint is near the L2 size. The L2 is write-back: a kernel's last writes
sit dirty in L2 when its end event fires and reach HBM later, outside the window. Napkin
math on an H100 (50 MB L2; the H200 has 60 MB): a layernorm of 8192x1024 fp32 reads 33.5 MB
and writes 33.5 MB; all its writes fit in L2, so within the window it moves little more
than its reads from HBM, and its bytes over time read ~113% of the large copy. A copy of
the same footprint does the same, so the honest roof of a row is the copy measured cold
(L2 flushed by reads, as cold mode does) at the row's bytes moved: the curve that
ceilings.py measures, interpolated here. Where the kernel writes less than the copy of its
footprint (a reduction), the copy absorbs more writes and its roof is higher than the
kernel can reach: a generous roof, never a false alarm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping

# The ladder of footprints (bytes read + written; a copy reads half and writes half):
# 4 MiB to 1 GiB, doubling. 4 MiB is well inside any L2, 1 GiB 20x the H100's: between
# them lie the L2 sizes of every current GPU (40 MB A100, 50 MB H100, 60 MB H200, 96-126 MB
# on B200/GB200). Nine copies of 2 MiB to 512 MiB: ms each at ~3 TB/s.
LADDER_BYTES = tuple(4 << 20 << step for step in range(9))

Curve = tuple[tuple[int, float], ...]  # (bytes moved, GB/s), ascending bytes


def normalized(points: Iterable | None) -> Curve | None:
    """A curve from its cached form ([[bytes, gbps], ...], JSON lists): the points with a
    positive footprint and a positive finite rate, ascending, one per footprint. None stays
    None (a cache from before curves)."""
    if points is None:
        return None
    clean = {}
    for point in points:
        try:
            moved, gbps = point
        except (TypeError, ValueError):
            continue
        if _positive(moved) and _positive(gbps):
            clean[int(moved)] = float(gbps)
    return tuple(sorted(clean.items()))


def bandwidth_at(curve: Curve, bytes_moved: float) -> float | None:
    """The curve's GB/s at `bytes_moved`: log-log linear between the two points around it,
    the nearest end's value beyond the ends (a footprint past the largest copy runs at its
    rate; one under the smallest is launch-bound anyway). None for an empty curve or a
    footprint that is not a positive number."""
    if not curve or not _positive(bytes_moved):
        return None
    if bytes_moved <= curve[0][0]:
        return curve[0][1]
    for (low_x, low_y), (high_x, high_y) in itertools.pairwise(curve):
        if bytes_moved == high_x:  # a measured footprint: its own figure, exactly
            return high_y
        if bytes_moved < high_x:
            share = math.log(bytes_moved / low_x) / math.log(high_x / low_x)
            return math.exp(math.log(low_y) + share * math.log(high_y / low_y))
    return curve[-1][1]


def memory_roof_gbps(ceilings: Mapping, bytes_moved: float | None) -> float | None:
    """The memory roof of a row that moves `bytes_moved`: the copy curve there, never below
    the large copy's `bandwidth_gbps` (a small copy's launch and ramp would otherwise lower
    the roof of a small kernel that pays them too, and a noisy point never sinks it).
    Ceilings without a curve (older caches, results.json from before) give the large copy's
    figure, as before."""
    headline = ceilings.get("bandwidth_gbps")
    headline = headline if _positive(headline) else None
    at_footprint = bandwidth_at(normalized(ceilings.get("bandwidth_curve")) or (),
                                bytes_moved) if bytes_moved else None
    if at_footprint is None:
        return headline
    return max(at_footprint, headline or 0.0)


def _positive(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value) and value > 0

"""In what order several workers take the planned points, and when a group is complete.

Pure. With one worker the plan's order stands (groups finish one after another,
tables appear as they do). With several, every worker takes the next point
from one queue as soon as it is free (no fixed shards: a slow point cannot
leave one worker with a long tail while the others idle), and the queue is
ordered so that the tail is short:

1. builds first: the first point of every distinct C++/CUDA build, so that the
   20-40 s compiles run side by side at the start (on different workers) and
   every later point of that variant finds its build cached;
2. then the largest points first (longest-processing-time-first: the small
   ones fill the gaps at the end).

A point's size is its napkin cost, max(FLOPs / RIDGE, bytes): which side of the
roofline it sits on, in bytes-equivalent, without knowing the machine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from gpubench.plan import Point

# FLOP per byte where compute starts to dominate: ~20 for fp32 CUDA cores and ~250 for
# tensor cores on a Hopper GPU; 20 ranks a 4096^3 fp32 matmul (137 GFLOP, 201 MB) far
# above a 1 GB copy, as it is (~2.6 ms against ~0.4 ms on an H200).
RIDGE_FLOP_PER_BYTE = 20.0


def estimated_cost(point: Point) -> float:
    """The napkin cost of one call of this point, in bytes-equivalent (see module doc)."""
    flops = point.family.flop_count(point.shape) or 0.0
    nbytes = point.family.byte_count(point.shape, _itemsize(point.dtype)) or 0.0
    return max(flops / RIDGE_FLOP_PER_BYTE, nbytes)


def build_identity(point: Point) -> tuple | None:
    """What one extension build covers (variants naming the same sources share one), or
    None for a variant that builds nothing (torch, Triton: JIT per call, not per variant)."""
    variant = point.variant
    if variant.kind != "cuda":
        return None
    sources = tuple(getattr(variant, name, ()) for name in
                    ("cuda", "cpp", "cpu", "cpp_sources", "cuda_sources"))
    return (str(point.family.directory), sources)


def order_for_workers(points: list[Point], workers: int) -> list[Point]:
    """The order in which `workers` free workers should take the points."""
    if workers <= 1:
        return list(points)
    runnable = [p for p in points if not p.skip]
    first_of_build: dict[tuple, Point] = {}
    for point in sorted(runnable, key=estimated_cost, reverse=True):
        identity = build_identity(point)
        if identity is not None:
            first_of_build.setdefault(identity, point)
    builds = list(first_of_build.values())
    chosen = {id(p) for p in builds}
    rest = sorted((p for p in runnable if id(p) not in chosen), key=estimated_cost,
                  reverse=True)
    # Skipped points cost nothing: they go first, so their groups can complete early.
    return [p for p in points if p.skip] + builds + rest


class GroupTracker:
    """Counts the points each group still waits for; a group is complete when the last
    of its points is done, in whatever order the workers finish them."""

    def __init__(self, points: Iterable[Point]):
        self.pending = Counter(p.group for p in points)

    def done(self, point: Point) -> bool:
        """Record one finished point; True when its group is now complete."""
        self.pending[point.group] -= 1
        return self.pending[point.group] == 0

    def open_groups(self) -> list[tuple]:
        return [group for group, count in self.pending.items() if count > 0]


def _itemsize(dtype: str) -> int:
    from gpubench.records.result import ITEMSIZE

    return ITEMSIZE.get(dtype, 4)

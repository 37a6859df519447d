"""In what order several workers take the planned points, and when a group is complete.

Pure. With one worker the plan's order stands (groups finish one after another,
tables appear as they do). With several, every worker takes the next point
from one queue as soon as it is free (no fixed shards: a slow point cannot
leave one worker with a long tail while the others idle), and the queue is
ordered so that the tail is short:

1. builds first: the first point of every distinct C++/CUDA build, so that the
   20-40 s compiles run side by side at the start (on different workers);
2. then the points that build nothing (torch, Triton), while those builds finish:
   a worker taking another point of a build in progress would wait on its lock;
3. then the other points of built variants, which find their builds cached.
Within 2 and 3, the largest points first (longest-processing-time-first: the
small ones fill the gaps at the end).

A point's size is its napkin cost, max(FLOPs / RIDGE, bytes): which side of the
roofline it sits on, in bytes-equivalent, without knowing the machine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from gpubench.run.plan import Point

# FLOP per byte where compute starts to dominate: ~20 for fp32 CUDA cores and ~250 for
# tensor cores on a Hopper GPU; 20 ranks a 4096^3 fp32 matmul (137 GFLOP, 201 MB) far
# above a 1 GB copy, as it is (~2.6 ms against ~0.4 ms on an H200).
RIDGE_FLOP_PER_BYTE = 20.0


def estimated_cost(point: Point) -> float:
    """The napkin cost of one call of this point, in bytes-equivalent (see module doc)."""
    cost = point.napkin  # a broken cost model costs 0: that point is not run anyway
    return max((cost.flops or 0.0) / RIDGE_FLOP_PER_BYTE, cost.bytes_moved or 0.0)


def build_identity(point: Point) -> tuple | None:
    """What one extension build covers (variants naming the same sources share one), or
    None for a variant that builds nothing (torch, Triton: JIT per call, not per variant)."""
    variant = point.variant
    if variant.kind != "cuda":
        return None
    # On a GPU the CPU sources are not built (and a CPU run skips CUDA-only variants), so
    # naive (with a CPU version) and tiled (without) of one .cu file share a GPU build.
    gpu = ("cuda", "cpp", "cpp_sources", "cuda_sources")
    names = gpu if (variant.cuda or variant.cuda_sources) else ("cpu", "cpp_sources")
    return (str(point.family.directory), tuple(getattr(variant, n) for n in names))


def order_for_workers(points: list[Point], workers: int) -> list[Point]:
    """The order in which `workers` free workers should take the points."""
    if workers <= 1:
        return list(points)
    runnable = [p for p in points if not p.skip and not p.spec_error]
    first_of_build: dict[tuple, Point] = {}
    for point in sorted(runnable, key=estimated_cost, reverse=True):
        identity = build_identity(point)
        if identity is not None:
            first_of_build.setdefault(identity, point)
    builds = list(first_of_build.values())
    chosen = {id(p) for p in builds}
    rest = sorted((p for p in runnable if id(p) not in chosen), key=estimated_cost,
                  reverse=True)
    unbuilt = [p for p in rest if build_identity(p) is None]
    built = [p for p in rest if build_identity(p) is not None]
    # Skipped points, and those whose cost model failed (recorded ERROR, not run), cost
    # nothing: they go first, so their groups can complete early.
    return [p for p in points if p.skip or p.spec_error] + builds + unbuilt + built


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


"""In what order several workers take the planned points, and when a group is complete.

Pure. With one worker the plan's order stands (groups finish one after another,
tables appear as they do). With several, every worker takes the next point
from one queue as soon as it is free (no fixed shards: a slow point cannot
leave one worker with a long tail while the others idle), and the queue is
ordered so that the tail is short:

1. builds first: the first point of every distinct C++/CUDA build, so that the
   compiles run side by side at the start (on different workers) -- unless a build
   phase (build_phase.py) compiles them all up front, off the workers;
2. then the points that build nothing (torch, Triton), while those builds finish:
   a worker taking another point of a build in progress would wait on its lock;
3. then the other points of built variants, which find their builds cached.
Within 2 and 3, the largest points first (longest-processing-time-first: the
small ones fill the gaps at the end).

The build phase's own sizing (how many builders, how many compiler jobs each) is
here too: `build_parallelism`.

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


def first_of_each_build(points: list[Point]) -> list[Point]:
    """One point of every distinct C++/CUDA build among the runnable points, the largest
    point of each, builds in order of their largest point (the first needed most)."""
    runnable = [p for p in points if not p.skip and not p.spec_error]
    first_of_build: dict[tuple, Point] = {}
    for point in sorted(runnable, key=estimated_cost, reverse=True):
        identity = build_identity(point)
        if identity is not None:
            first_of_build.setdefault(identity, point)
    return list(first_of_build.values())


def order_for_workers(points: list[Point], workers: int, prebuilt: bool = False) -> list[Point]:
    """The order in which `workers` free workers should take the points. `prebuilt`: a
    build phase compiles the extensions, so no worker's point is put first to build."""
    if workers <= 1:
        return list(points)
    runnable = [p for p in points if not p.skip and not p.spec_error]
    builds = [] if prebuilt else first_of_each_build(points)
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



# The host cores a build phase leaves alone: one per lane (its worker launches kernels, and
# a launch-bound kernel's time is the host's: a compile on that core would show in it) and
# one for gpubench itself (events, tables, saving).
CORES_KEPT_PER_LANE = 1
CORES_KEPT_FOR_PARENT = 1
# An extension is 2-3 translation units (kernel .cu, binding, module file), compiled by one
# ninja: 2 jobs each keep a builder's units side by side without one build taking the host.
MIN_JOBS_PER_BUILDER = 2


def build_parallelism(builds: int, cores: int, lanes: int) -> tuple[int, int]:
    """(builders, compiler jobs each) for `builds` distinct extensions on a host of `cores`
    with `lanes` workers measuring meanwhile: one builder per extension up to half the free
    cores (each runs >= 2 compiler jobs), the free cores shared out among them. Builds are
    independent ninja graphs, so side by side they scale until the cores run out; one
    ninja alone cannot use more cores than its extension has translation units (2-3)."""
    free = max(1, cores - lanes * CORES_KEPT_PER_LANE - CORES_KEPT_FOR_PARENT)
    builders = max(1, min(builds, free // MIN_JOBS_PER_BUILDER))
    return builders, max(MIN_JOBS_PER_BUILDER, free // builders)

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

A free worker then takes, from that queue (`pick_for_lane`):

- a point of a group it has begun (family, dtype, shape: the variants a table row
  compares, speedups and `compare`'s group shift among them). Each worker process moves
  short kernels by its own few percent: points under 10 us shifted by -5.5% to +7.4%
  per worker against one GPU, by about 5 points between the workers of one run (2 and 4
  H200s, docs/journal/perf-notes.md "Twenty-ninth to thirty-second runs"). Within one
  process that shift is common to a group's variants and cancels in their speedups and in
  `compare`'s group shift; split over workers it does not: parallel runs drew FASTER/SLOWER
  for 2.8% of their points against one GPU, a sequential rerun for 1.3%. Only the shared
  part, though: 28 one-GPU processes measured later moved each op its own way as well
  (docs/measurement.md "Between processes"), which only runs a side account for;
- else the first point of a group no worker has begun, of a kind (family, variant,
  dtype) it has run already, else of a kind no worker has run yet, else the first: each
  worker process pays the first use of each kind of point once (Triton loading that
  kernel, cuBLAS that dtype's kernels: +13 ms a kind on average, up to 0.1 s on 4 H200s),
  so kinds kept on one worker are paid once per run instead of once per
  worker (on that run's tasks, replayed by benchmarks/replay_schedule.py, 4 workers paid
  127 first uses in queue order and 54 this way, one GPU 53);
- else, when every queued point belongs to a group another worker has begun, one of
  those (a kind it has run first): the tail stays short, at the cost of that group's split.

The build phase's own sizing (how many builders, how many compiler jobs each) is
here too: `build_parallelism`.

A point's size is its napkin cost, max(FLOPs / RIDGE, bytes): which side of the
roofline it sits on, in bytes-equivalent, without knowing the machine.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

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


def builds_first(points: list[Point], workers: int, prebuilt: bool) -> list[Point]:
    """The points order_for_workers puts first so that their builds start at once on the
    workers: none with one worker or a build phase (`prebuilt`)."""
    return [] if workers <= 1 or prebuilt else first_of_each_build(points)


def order_for_workers(points: list[Point], workers: int, prebuilt: bool = False) -> list[Point]:
    """The order in which `workers` free workers should take the points. `prebuilt`: a
    build phase compiles the extensions, so no worker's point is put first to build."""
    if workers <= 1:
        return list(points)
    runnable = [p for p in points if not p.skip and not p.spec_error]
    builds = builds_first(points, workers, prebuilt)
    chosen = {id(p) for p in builds}
    rest = sorted((p for p in runnable if id(p) not in chosen), key=estimated_cost,
                  reverse=True)
    unbuilt = [p for p in rest if build_identity(p) is None]
    built = [p for p in rest if build_identity(p) is not None]
    # Skipped points, and those whose cost model failed (recorded ERROR, not run), cost
    # nothing: they go first, so their groups can complete early.
    return [p for p in points if p.skip or p.spec_error] + builds + unbuilt + built


def kind_of(point: Point) -> tuple[str, str, str]:
    """What a worker's first use is paid for: the same variant's kernels in one dtype."""
    return (point.family.name, point.variant.name, point.dtype)


def pick_for_lane(queued: Iterable[tuple[int, Point]], ran: set, claimed: set,
                  urgent: frozenset = frozenset(), mine: frozenset | set = frozenset(),
                  begun: set | frozenset = frozenset()) -> int | None:
    """Of `queued` ((position, point) in queue order: the points a worker may take now),
    the position of the point a worker that has run the kinds `ran` and begun the groups
    `mine` should take (module doc): one whose id is `urgent` (a build that workers make,
    queued first by order_for_workers: it must start now) or of a group in `mine`; else,
    among groups no worker has begun (not in `begun`), the first of a kind in `ran` (a
    worker that ran a group of a family and dtype has run its variants' kinds: it begins
    another of them), else of a kind not in `claimed` (what any worker has run), else the
    first; else the first of a kind in `ran` among the others' groups, else the first;
    None when nothing is queued. One pass, stopping at the first of `mine`."""
    fresh_kind = fresh_unclaimed = fresh_first = taken_ran = first = None
    for position, point in queued:
        if id(point) in urgent or point.group in mine:
            return position
        kind_ran = kind_of(point) in ran
        if first is None:
            first = position
        if point.group in begun:
            if kind_ran and taken_ran is None:
                taken_ran = position
            continue
        if kind_ran and fresh_kind is None:
            fresh_kind = position
        if fresh_unclaimed is None and kind_of(point) not in claimed:
            fresh_unclaimed = position
        if fresh_first is None:
            fresh_first = position
    for choice in (fresh_kind, fresh_unclaimed, fresh_first, taken_ran, first):
        if choice is not None:
            return choice
    return None


@dataclass
class LaneState:
    """What one worker has run: the kinds whose first use it has paid, the groups it has
    begun (pick_for_lane keeps both on it)."""

    kinds: set = field(default_factory=set)
    groups: set = field(default_factory=set)


# What SharedQueue.take answers when no point is left (None: none is ready yet).
EMPTY = ("empty",)


class SharedQueue:
    """The planned points as (plan index, point), in the order workers take them
    (order_for_workers), shared by the lanes' threads: `take` picks one for a lane."""

    def __init__(self, points: list[Point], workers: int, prebuilt: bool):
        plan_index = {id(p): i for i, p in enumerate(points)}
        self.pending = deque((plan_index[id(p)], p)
                             for p in order_for_workers(points, workers, prebuilt))
        self.single = workers <= 1  # one worker: the plan's order stands
        self.urgent = frozenset(map(id, builds_first(points, workers, prebuilt)))
        self.claimed: set = set()  # the kinds some worker has taken
        self.begun: set = set()  # the groups some worker has taken a point of
        self.lock = threading.Lock()

    def take(self, lane: LaneState, ready: Callable[[Point], bool]):
        """The next (plan index, point) for a worker whose state is `lane` (its kind and
        group are added to it), among the points `ready` lets run now; None when none is
        ready, EMPTY when none is left."""
        with self.lock:
            if not self.pending:
                return EMPTY
            queued = ((position, point) for position, (_, point) in enumerate(self.pending)
                      if ready(point))
            if self.single:
                chosen = next((position for position, _ in queued), None)
            else:
                chosen = pick_for_lane(queued, lane.kinds, self.claimed, self.urgent,
                                       lane.groups, self.begun)
            if chosen is None:
                return None
            item = self.pending[chosen]
            del self.pending[chosen]
            point = item[1]
            if not (point.skip or point.spec_error):  # not run: no first use, no group begun
                lane.kinds.add(kind_of(point))
                lane.groups.add(point.group)
                self.claimed.add(kind_of(point))
                self.begun.add(point.group)
            return item


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

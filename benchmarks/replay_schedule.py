"""Replay a run's points on N simulated workers: queue order, kinds kept, groups kept.

    python benchmarks/replay_schedule.py ONE_GPU_RUN PARALLEL_RUN [--lanes 2,4]
                                         [--kind-first-s 0.013] [--first-points-s 0.7]

ONE_GPU_RUN and PARALLEL_RUN are run folders (worker-*.log: each task's start and end).
Each point takes as long as it did on one GPU; the order the parallel run's workers took
the points (all lanes merged by start time) stands for the queue. A worker pays
--first-points-s once (its process's first uses) and --kind-first-s for the first point
of each kind (family, variant, dtype) it runs. Prints, for each worker count and policy,
when the last and the first worker end, how many kind-firsts the workers paid and how
many groups (family, shape, dtype) were split over workers: what keeping kinds and groups
together (gpubench/run/schedule.py pick_for_lane, the very function the runner uses)
should save, and whether it lengthens the tail (docs/journal/perf-notes.md, "Sixteenth to
eighteenth runs": 4 workers 127 -> 54 kind-firsts; "Twenty-ninth to thirty-second runs").
"""

from __future__ import annotations

import argparse
import heapq
import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

from gpubench.run.schedule import kind_of, pick_for_lane

TASK_LINE = re.compile(r"\[gpubench worker\] (\d\d:\d\d:\d\d\.\d+) task (-?\d+)(:| done)\s*(.*)")
# The gap between a worker's points (its save, the next task's handing out): 10-13 ms a
# point on the lent H200 hosts (worker logs, 2026-11-27).
GAP_S = 0.012


def read_tasks(log: Path) -> list[tuple[float, str, float]]:
    """(start, label, seconds) of each point a worker log shows done, in its order; the
    interference reference's tasks (negative ids) left out."""
    tasks, current = [], None
    for line in log.read_text(errors="replace").splitlines():
        match = TASK_LINE.match(line)
        if not match or match.group(2).startswith("-"):
            continue
        at = datetime.strptime(match.group(1), "%H:%M:%S.%f").timestamp()
        if match.group(3) == ":":
            label = match.group(4).strip()
            # family/variant/shape/dtype; any other label (a log cut short) is no point
            current = (at, label) if label.count("/") == 3 else None
        elif current is not None:
            tasks.append((current[0], current[1], at - current[0]))
            current = None
    return tasks


def run_tasks(folder: Path) -> list[tuple[float, str, float]]:
    """Every worker's tasks of a run folder (a Dask run's under dask-workers/)."""
    logs = sorted(folder.glob("worker*.log")) + sorted(folder.glob("dask-workers/worker*.log"))
    return [task for log in logs for task in read_tasks(log)]


def as_point(label: str):
    """What pick_for_lane reads of a point, from its label family/variant/shape/dtype."""
    family, variant, shape, dtype = label.split("/", 3)
    return SimpleNamespace(label=label, family=SimpleNamespace(name=family),
                           variant=SimpleNamespace(name=variant), dtype=dtype,
                           group=(family, dtype, shape))


POLICIES = ("queue", "kinds kept", "groups kept")


def replay(queue: list[str], seconds: dict[str, float], workers: int, policy: str,
           first_points_s: float, kind_first_s: float) -> tuple[float, float, int, int]:
    """(last worker's end, first worker's end, kind-firsts paid, groups split) of list
    scheduling `queue` on `workers`: each free worker takes the queue's first point, or
    what pick_for_lane picks for it, keeping kinds only or kinds and groups (POLICIES)."""
    pending = [as_point(label) for label in queue]
    free = [(0.0, worker) for worker in range(workers)]
    ran: list[set] = [set() for _ in range(workers)]
    mine: list[set] = [set() for _ in range(workers)]
    claimed: set = set()
    owners: dict[tuple, set] = {}
    ends, kind_firsts = [0.0] * workers, 0
    while pending:
        now, worker = heapq.heappop(free)
        position = 0
        if policy != "queue":
            keep = policy == "groups kept"
            position = pick_for_lane(enumerate(pending), ran[worker], claimed, frozenset(),
                                     mine[worker] if keep else set(),
                                     owners.keys() if keep else set())
        point = pending.pop(position)
        kind = kind_of(point)
        cost = seconds[point.label] + (first_points_s if not ran[worker] else 0.0)
        if kind not in ran[worker]:
            cost += kind_first_s
            kind_firsts += 1
        ran[worker].add(kind)
        mine[worker].add(point.group)
        claimed.add(kind)
        owners.setdefault(point.group, set()).add(worker)
        ends[worker] = now + cost + GAP_S
        heapq.heappush(free, (ends[worker], worker))
    split = sum(1 for workers_of in owners.values() if len(workers_of) > 1)
    return max(ends), min(ends), kind_firsts, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("one_gpu", type=Path, help="the one-GPU run's folder")
    parser.add_argument("parallel", type=Path, help="a several-worker run's folder")
    parser.add_argument("--lanes", default="2,4", help="worker counts to replay")
    parser.add_argument("--kind-first-s", type=float, default=0.013,
                        help="what a worker's first point of a kind costs it (4 H200s: 13 ms)")
    parser.add_argument("--first-points-s", type=float, default=0.7,
                        help="what a worker's first points cost it (4 H200s: ~0.7 s)")
    args = parser.parse_args()
    try:
        lanes = [int(n) for n in args.lanes.split(",")]
    except ValueError:
        lanes = []
    if not lanes or min(lanes) < 1:
        parser.error(f"--lanes {args.lanes!r}: worker counts, e.g. 2,4")
    seconds = {label: spent for _, label, spent in run_tasks(args.one_gpu)}
    queue = [label for _, label, _ in sorted(run_tasks(args.parallel)) if label in seconds]
    if not queue:
        parser.error(f"no task of {args.parallel} is in {args.one_gpu}'s worker logs")
    print("| workers | order | last end s | first end s | kind-firsts | groups split |")
    print("|---:|---|---:|---:|---:|---:|")
    groups = len({as_point(label).group for label in queue})
    for workers in lanes:
        for policy in POLICIES:
            last, first, firsts, split = replay(queue, seconds, workers, policy,
                                                args.first_points_s, args.kind_first_s)
            print(f"| {workers} | {policy} | {last:.2f} | {first:.2f} | {firsts} | "
                  f"{split} of {groups} |")


if __name__ == "__main__":
    main()

"""The parent side of a run: feed planned points to a worker, survive its crashes.

For each point: skip it (reason known from the plan), or send it to the live
worker and wait, phase by phase, with the build timeout while compiling and
the run timeout otherwise. A worker that dies or times out is killed with its
process group and the point is recorded as CRASHED or TIMEOUT; the next point
gets a fresh worker. Results reach the caller group by group through
callbacks, so tables and files appear as the run goes and survive a Ctrl-C.
Never prints: the CLI decides what to show.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from gpubench import results as R
from gpubench.plan import Point
from gpubench.protocol import Task
from gpubench.stopping import TimingSettings
from gpubench.workers import WorkerDied, WorkerProcess, WorkerTimeout


@dataclass(frozen=True)
class RunSettings:
    device: str  # "cuda" or "cpu"
    log_dir: Path
    timing: TimingSettings = field(default_factory=TimingSettings)
    modes: tuple[str, ...] = ("cold",)
    remeasure_throttled: bool = False
    # A point's check and timing take ~1 s; 120 s leaves room for a 100 ms
    # kernel's warmup and samples, and a hung kernel is given up within 2 minutes.
    timeout_s: float = 120.0
    # A cold load_inline build is 20-35 s with torch headers; 600 s is generous
    # even on 2 cores, yet ends a compiler stuck for good.
    build_timeout_s: float = 600.0


@dataclass
class RunCallbacks:
    """Hooks for the caller; each is optional."""

    point_started: Callable[[Point], None] = lambda point: None
    phase: Callable[[Point, str], None] = lambda point, phase: None
    point_done: Callable[[list[R.Result]], None] = lambda rows: None
    group_done: Callable[[list[R.Result]], None] = lambda group: None
    worker_started: Callable[[dict], None] = lambda env: None


class Runner:
    def __init__(self, settings: RunSettings, callbacks: RunCallbacks | None = None):
        self.settings = settings
        self.callbacks = callbacks or RunCallbacks()
        self.worker: WorkerProcess | None = None
        self.workers_started = 0
        self.env: dict = {}
        self.results: list[R.Result] = []

    def run(self, points: list[Point]) -> list[R.Result]:
        """Run every point; on KeyboardInterrupt, mark the rest NOT_RUN and re-raise."""
        group: list[R.Result] = []
        try:
            for _, members in groupby(enumerate(points), key=lambda item: item[1].group):
                group = []
                for index, point in members:
                    rows = self._run_point(index, point)
                    group.extend(rows)
                    self.results.extend(rows)
                    self.callbacks.point_done(rows)
                self._finish_group(group)
                group = []
        except KeyboardInterrupt:
            self._stop_worker()
            done = {(r.family, r.variant, r.size, r.dtype) for r in self.results}
            for point in points:
                if (point.family.name, point.variant.name, point.size, point.dtype) in done:
                    continue
                rows = self._expand(point, R.NOT_RUN, "interrupted (Ctrl-C)")
                self.results.extend(rows)
                if group and point.group == _group_of(group):
                    group.extend(rows)
            self._finish_group(group)
            raise
        finally:
            self._stop_worker()
        return self.results

    # ------------------------------------------------------------ per point

    def _run_point(self, index: int, point: Point) -> list[R.Result]:
        """The point's results, one per timing mode."""
        self.callbacks.point_started(point)
        if point.skip:
            return self._expand(point, R.SKIPPED, point.skip)
        task = Task(index, point.family.name, str(point.family.directory), point.variant.name,
                    point.size, point.dtype, point.seed, self.settings.timing,
                    self.settings.modes, self.settings.remeasure_throttled)
        try:
            worker = self._live_worker()
            worker.send(task)
            payload = self._await_result(worker, point)
        except WorkerTimeout as timeout:
            self._kill_worker()
            return self._expand(point, R.TIMEOUT, str(timeout))
        except WorkerDied as death:
            self._kill_worker()
            return self._expand(point, R.CRASHED, str(death))
        if payload.get("status") == R.CRASHED:  # a CUDA fault; the worker exits by itself
            self._kill_worker()
        return R.from_payload(_blank(point, R.ERROR, None), payload, self._modes())

    def _modes(self) -> tuple[str, ...]:
        from gpubench.timers import modes_for_device

        return modes_for_device(self.settings.modes, self.settings.device)

    def _expand(self, point: Point, status: str, error: str | None) -> list[R.Result]:
        rows = []
        for mode in self._modes():
            row = _blank(point, status, error)
            row.mode = mode
            rows.append(row)
        return rows

    def _await_result(self, worker: WorkerProcess, point: Point) -> dict:
        phase = "start"
        deadline = time.monotonic() + self.settings.build_timeout_s
        while True:
            try:
                message = worker.next_message(deadline)
            except WorkerTimeout:
                limit = self._limit(phase)
                raise WorkerTimeout(f"no answer within {limit:.0f} s while in phase "
                                    f"'{phase}' (raise --timeout if it is just slow)") from None
            if message.get("type") == "phase":
                phase = message["phase"]
                deadline = time.monotonic() + self._limit(phase)
                self.callbacks.phase(point, phase)
            elif message.get("type") == "result":
                return message["result"]

    def _limit(self, phase: str) -> float:
        return self.settings.build_timeout_s if phase in ("start", "build") \
            else self.settings.timeout_s

    # ------------------------------------------------------------ workers

    def _live_worker(self) -> WorkerProcess:
        if self.worker is None:
            self.workers_started += 1
            log = self.settings.log_dir / f"worker-{self.workers_started}.log"
            worker = WorkerProcess(self.settings.device, log)
            try:
                env = worker.start()
            except WorkerTimeout:
                worker.kill()
                raise WorkerDied(f"worker did not start (log: {log})") from None
            self.worker = worker
            if not self.env:
                self.env = env
                self.callbacks.worker_started(env)
        return self.worker

    def _kill_worker(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None

    def _stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def _finish_group(self, group: list[R.Result]) -> None:
        if group:
            R.finish_group(group, self.env.get("ceilings"))
            self.callbacks.group_done(list(group))


def _group_of(group: list[R.Result]) -> tuple[str, str, int]:
    return (group[-1].family, group[-1].dtype, group[-1].size)


def _blank(point: Point, status: str, error: str | None) -> R.Result:
    """A result with the point's identity and cost model, before any measurement."""
    family, size = point.family, point.size
    return R.Result(
        family=family.name, variant=point.variant.name, kind=point.variant.kind, size=size,
        dtype=point.dtype, status=status, baseline=point.variant.baseline, error=error,
        flops=float(family.flops(size)),
        bytes_moved=float(family.bytes_moved(size, R.ITEMSIZE.get(point.dtype, 4))),
        seed=point.seed,
    )

"""The build phase: every distinct C++/CUDA extension of a run, compiled up front, side by
side over the host's cores, while the GPU workers already measure what needs no build.

Why: a worker that builds holds its GPU idle for the whole compile, and two workers that
build at once each run their own ninja over the same cores, so on 2 GPUs the builds got
slower, not faster (issue 32: 100 s of builds summed against 59 s on one GPU). Here
builder processes (builder.py) take the plan's builds from one queue: as many builders as
schedule.build_parallelism allows, each at nice +10 with MAX_JOBS compiler jobs. A build
lands in the on-disk cache, where the worker that later takes one of its points finds it
(~10 ms to import); no extension is compiled twice, since each build identity is one job.

The runner asks `ready(point)` before a lane takes a point, and `failed(point)` to record a
build that failed (BUILD ERROR, as a worker would have said it) without sending its points
to a worker. `summary()` is what the run prints and keeps: wall time, compile seconds
summed, the parallelism they show, how many were cached, failed, rebuilt by a worker.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.worker_result import MalformedWorkerResult, WorkerResult
from gpubench.run.build_progress import BUILD_PHASE, report_builds
from gpubench.run.lanes.lane import Outcome
from gpubench.run.lanes.worker_process import WorkerDied, WorkerProcess, WorkerTimeout
from gpubench.run.plan import Point
from gpubench.run.schedule import build_identity, build_parallelism, first_of_each_build

# A plan with fewer distinct builds than this builds in its worker, as before: one build
# gains nothing from a phase, and a builder costs a Python + torch start (~1.5-3 s) that
# the edit loop (`run --watch`, one extension) would feel.
MIN_BUILDS_FOR_PHASE = 2


@dataclass(frozen=True)
class BuildsDone:
    """The build phase ended: its summary (on the runner's queue, which keeps it in the
    run's env and says it)."""

    summary: dict


@dataclass
class BuildJob:
    """One distinct build: the point it is made for, and what became of it."""

    point: Point
    identity: tuple
    has_cuda: bool  # the run's machine: the build request a worker there would make
    has_triton: bool
    outcome: Outcome | None = None
    started: float | None = None  # time.monotonic()
    finished: float | None = None
    shown: bool = False  # its compile time went to a row already (the first to finish)
    builder: WorkerProcess | None = None  # the builder compiling it, while it runs

    def to_json(self) -> str:
        variant, family = self.point.variant, self.point.family
        return json.dumps({"family": family.name, "family_dir": str(family.directory),
                           "variant": variant.name, "has_cuda": self.has_cuda,
                           "has_triton": self.has_triton})


@dataclass
class BuildPhase:
    """The builds of `points` on `device` (the run's), their builders' logs in log_dir."""

    points: list[Point]
    device: str
    log_dir: Path
    timeout_s: float
    lanes: int = 1
    env: dict = field(default_factory=dict)  # a lane's CUDA_VISIBLE_DEVICES: the same arch
    has_triton: bool = False
    # Where the phase tells what it does (start()): each build's start and progress
    # (events.Phase, from a builder thread and build_progress.report_builds) and, once,
    # its end (BuildsDone, from the builder thread that finished last).
    report: Callable[[object], None] | None = None

    def __post_init__(self) -> None:
        points = first_of_each_build(self.points)
        self.jobs = {build_identity(p): BuildJob(p, build_identity(p), self.device == "cuda",
                                                 self.has_triton) for p in points}
        self.builders, self.jobs_each = build_parallelism(len(self.jobs), _cores(), self.lanes)
        self._queue = deque(self.jobs.values())
        self._changed = threading.Condition()
        self._processes: list[WorkerProcess] = []
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._left = len(self.jobs)
        self._over = threading.Event()  # every build ended, or the phase was stopped
        self.started = self.finished = None
        self.rebuilt = 0  # builds a worker compiled again (note_worker_build)

    @classmethod
    def wanted(cls, points: list[Point]) -> bool:
        """Whether a phase pays off for this plan (MIN_BUILDS_FOR_PHASE)."""
        return len(first_of_each_build(points)) >= MIN_BUILDS_FOR_PHASE

    # ------------------------------------------------------------ the runner's side

    def start(self, report: Callable[[object], None] | None = None) -> None:
        """Builders take the jobs from now; what they do goes to `report` (the runner's
        queue), where given."""
        self.report = report
        self.started = time.monotonic()
        for index in range(self.builders):
            thread = threading.Thread(target=self._builder_loop, args=(index,), daemon=True,
                                      name=f"gpubench-builder-{index}")
            self._threads.append(thread)
            thread.start()
        if self.report is not None:
            report_builds(self._running, self.report, self._over)

    def _running(self) -> list[tuple[E.PointRef, object, float]]:
        """(point, builder's Popen, start) of each build compiling now."""
        with self._changed:
            return [(job.point.ref(), job.builder.process, job.started)
                    for job in self.jobs.values()
                    if job.outcome is None and job.builder is not None]

    def ready(self, point: Point) -> bool:
        """Whether a lane may take `point` now: it builds nothing, or its build is over."""
        job = self.jobs.get(build_identity(point))
        return job is None or job.outcome is not None

    def failed(self, point: Point) -> Outcome | None:
        """How the point's build failed, or None (it built, or builds nothing here)."""
        job = self.jobs.get(build_identity(point))
        if job is None or job.outcome is None:
            return None
        result = job.outcome.result
        return None if result is not None and result.status == R.OK else job.outcome

    def note_worker_build(self, point: Point, build: BuildInfo) -> None:
        """A worker's own account of loading the point's build: a compile there (cached
        False) of a build this phase made means it was compiled twice; counted, and kept
        in the summary, since that is what the phase exists to prevent."""
        job = self.jobs.get(build_identity(point))
        if job is not None and self.failed(point) is None and build.cached is False:
            self.rebuilt += 1

    def build_for_row(self, point: Point) -> BuildInfo | None:
        """The build's own figures (compile seconds, cached), for the first point of the
        build that finishes: the table shows a compile once, where a worker's build would
        have been shown; the worker itself found it cached. None for every other point."""
        job = self.jobs.get(build_identity(point))
        if job is None or job.shown or job.outcome is None or job.outcome.result is None:
            return None
        job.shown = True
        return replace(job.outcome.result.build, build_phase=True)

    def wait(self, timeout_s: float) -> None:
        """Until a build finishes, or timeout_s."""
        with self._changed:
            if self._left:
                self._changed.wait(timeout_s)

    def compiled_during(self, since: float) -> int:
        """How many builds compiled at some time after `since` (time.monotonic()): those
        running now and those that ended since having compiled (not found cached). The
        interference reference says it was measured beside them (interference_timing.py):
        compilers share the host's cores with the launches it times."""
        with self._changed:
            return sum(1 for job in self.jobs.values() if job.started is not None and (
                job.outcome is None or (job.finished > since and _compiled(job.outcome))))

    def stop(self) -> None:
        """Kill every builder (and its compilers) now; jobs not started stay unbuilt."""
        with self._changed:
            self._stopping = True
            self._queue.clear()
            self._changed.notify_all()
        self._over.set()
        for process in list(self._processes):
            process.kill()
        for thread in self._threads:
            thread.join(timeout=15)

    def summary(self) -> dict:
        """What the phase did, measured: builds, wall time, compile seconds and parallelism."""
        done = [j for j in self.jobs.values() if j.outcome is not None]
        results = [j.outcome.result for j in done if j.outcome.result is not None]
        compile_s = sum(float(r.build.compile_s or 0.0) for r in results)
        wall = ((self.finished or time.monotonic()) - self.started) if self.started else 0.0
        return {"builds": len(self.jobs), "done": len(done),
                "cached": sum(1 for r in results if r.build.cached),
                "failed": sum(1 for j in done if self.failed(j.point) is not None),
                "rebuilt_by_workers": self.rebuilt,
                "builders": self.builders, "jobs_each": self.jobs_each,
                "wall_s": round(wall, 3), "compile_s": round(compile_s, 3),
                "parallelism": round(compile_s / wall, 2) if wall > 0 else None,
                "jobs": [self._timeline(j) for j in done]}

    def _timeline(self, job: BuildJob) -> dict:
        """When one build ran, in seconds from the phase's start (its builder's start
        included for the first job of each builder), and how it ended."""
        result = job.outcome.result
        return {"variant": f"{job.point.family.name}/{job.point.variant.name}",
                "start_s": round(job.started - self.started, 3),
                "end_s": round(job.finished - self.started, 3),
                "status": result.status if result is not None else job.outcome.failure,
                "cached": bool(result.build.cached) if result is not None else False}

    # ------------------------------------------------------------ builder threads

    def _next_job(self) -> BuildJob | None:
        with self._changed:
            if self._stopping or not self._queue:
                return None
            return self._queue.popleft()

    def _builder_loop(self, index: int) -> None:
        process: WorkerProcess | None = None
        try:
            while (job := self._next_job()) is not None:
                job.started = time.monotonic()
                if process is None:
                    process = self._start_builder(index)
                with self._changed:
                    job.builder = process
                if self.report is not None:
                    self.report(E.Phase(job.point.ref(), BUILD_PHASE))
                outcome, process = self._build(process, job)
                self._finish(job, outcome)
        finally:
            if process is not None:
                process.stop()

    def _start_builder(self, index: int) -> WorkerProcess | None:
        env = {**self.env, "MAX_JOBS": str(self.jobs_each)}
        process = WorkerProcess(self.device, self.log_dir / f"builder-{index + 1}.log", env,
                                module="gpubench.run.builder")
        self._processes.append(process)
        try:
            process.start()
        except (WorkerDied, WorkerTimeout):
            process.kill()
            return None
        return process

    def _build(self, process: WorkerProcess | None, job: BuildJob):
        """(the job's Outcome, the builder to use next: None after a failure kills it)."""
        if process is None:
            return Outcome(failure=R.ERROR, error="the build phase's builder did not start "
                                                  f"(log: {self.log_dir})"), None
        try:
            process.send(job)
            message = process.next_message(time.monotonic() + self.timeout_s)
            return Outcome(WorkerResult.from_dict(message.get("result"))), process
        except WorkerTimeout:
            process.kill()
            return Outcome(failure=R.TIMEOUT, error=f"build took over {self.timeout_s:.0f} s "
                                                    "(raise --build-timeout if it is just "
                                                    "slow)"), None
        except (WorkerDied, MalformedWorkerResult) as exc:
            process.kill()
            return Outcome(failure=R.CRASHED, error=f"the builder died: {exc}"), None

    def _finish(self, job: BuildJob, outcome: Outcome) -> None:
        with self._changed:
            job.outcome, job.finished, job.builder = outcome, time.monotonic(), None
            self._left -= 1
            last = self._left == 0
            if last:
                self.finished = job.finished
            self._changed.notify_all()
        if last:
            self._over.set()
            if self.report is not None:
                self.report(BuildsDone(self.summary()))


def _compiled(outcome: Outcome) -> bool:
    """Whether a finished build compiled: anything but a build found cached."""
    return not (outcome.result is not None and outcome.result.build.cached)


def _cores() -> int:
    """The cores builds may use: GPUBENCH_BUILD_CORES where set (a shared host, or a test
    that wants builders side by side on a small machine), else those this process may run
    on (a container's or taskset's limit, not the host's)."""
    chosen = os.environ.get("GPUBENCH_BUILD_CORES", "")
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1





def describe_build_phase(summary: dict) -> str:
    """One line: what the build phase did and how parallel it was, measured."""
    builders = f"{summary['builders']} builder{'s' if summary['builders'] != 1 else ''}"
    if summary.get("cached") == summary["builds"]:
        return (f"build phase: {summary['builds']} extensions, all cached "
                f"({summary['wall_s']:.1f} s, {builders})")
    line = (f"build phase: {summary['builds']} extensions in {summary['wall_s']:.1f} s "
            f"({summary['compile_s']:.1f} s of builds side by side: parallelism "
            f"{summary.get('parallelism') or 0:.1f}x; {builders} x {summary['jobs_each']} "
            f"compiler jobs)")
    extras = [f"{summary[k]} {k}" for k in ("cached", "failed") if summary.get(k)]
    return line + (f"; {', '.join(extras)}" if extras else "")


def build_phase_for(points: list[Point], machine, log_dir: Path, build_timeout_s: float,
                    lanes: list | None, remote: bool) -> BuildPhase | None:
    """The run's build phase, or None where the workers build as before: a remote
    --cluster (its nodes have their own caches and compilers; this one may have none),
    fewer than MIN_BUILDS_FOR_PHASE builds, or GPUBENCH_BUILD_PHASE=0 (to measure what
    the phase gains: benchmarks/scale_out.py)."""
    if remote or os.environ.get("GPUBENCH_BUILD_PHASE", "1") == "0":
        return None
    if not BuildPhase.wanted(points):
        return None
    slot = getattr(lanes[0], "slot", None) if lanes else None
    env = slot.env() if slot is not None else {}
    env.pop("OMP_NUM_THREADS", None)  # a CPU lane's thread cap is for timing, not compiling
    env.pop("MKL_NUM_THREADS", None)
    return BuildPhase(points, machine.device, log_dir, build_timeout_s,
                      lanes=len(lanes) if lanes else 1, env=env,
                      has_triton=machine.has_triton)

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
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

from gpubench.plan import Point
from gpubench.protocol import GARBAGE, Envelope
from gpubench.records import result as R
from gpubench.records.derive import finish_group
from gpubench.records.device_work import DeviceWork
from gpubench.records.measurement import Measurement
from gpubench.records.settings import TimingSettings
from gpubench.workers import WorkerDied, WorkerProcess, WorkerTimeout


@dataclass
class RunCallbacks:
    """Hooks for the caller; each is optional."""

    point_started: Callable[[Point], None] = lambda point: None
    phase: Callable[[Point, str], None] = lambda point, phase: None
    point_done: Callable[[list[R.Result]], None] = lambda rows: None
    group_done: Callable[[list[R.Result]], None] = lambda group: None
    worker_started: Callable[[dict], None] = lambda env: None


class Runner:
    """Runs points on `device` ("cuda" or "cpu") with one TimingSettings for all of them;
    worker logs go to log_dir."""

    def __init__(self, device: str, log_dir: Path, timing: TimingSettings,
                 callbacks: RunCallbacks | None = None):
        self.device, self.log_dir, self.timing = device, log_dir, timing
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
        except KeyboardInterrupt as stop:
            self._kill_worker()
            done = {r.key for r in self.results}
            reason = str(stop) or "interrupted (Ctrl-C)"
            for point in points:
                if point.key(self._modes()[0]) in done:
                    continue
                rows = self._expand(point, R.NOT_RUN, reason)
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
        envelope = Envelope(point.task(index, self.timing))
        try:
            worker = self._live_worker()
            worker.send(envelope)
            payload = self._await_result(worker, point, envelope)
        except WorkerTimeout as timeout:
            self._kill_worker()
            return self._expand(point, R.TIMEOUT, str(timeout))
        except WorkerDied as death:
            self._kill_worker()
            return self._expand(point, R.CRASHED, str(death))
        except ForeignMessage as foreign:
            self._kill_worker()
            return self._expand(point, R.ERROR, str(foreign))
        if payload.get("status") == R.CRASHED:  # a CUDA fault; the worker exits by itself
            self._kill_worker()
        return results_from_payload(point, payload, self._modes())

    def _modes(self) -> tuple[str, ...]:
        from gpubench.timers import modes_for_device

        return modes_for_device(self.timing.modes, self.device)

    def _expand(self, point: Point, status: str, error: str | None) -> list[R.Result]:
        return [point.result(mode, status, error=error) for mode in self._modes()]

    def _await_result(self, worker: WorkerProcess, point: Point, envelope: Envelope) -> dict:
        phase = "start"
        deadline = time.monotonic() + self.timing.build_timeout_s
        while True:
            try:
                message = worker.next_message(deadline)
            except WorkerTimeout:
                limit = self._limit(phase)
                raise WorkerTimeout(f"no answer within {limit:.0f} s while in phase "
                                    f"'{phase}' (raise --timeout if it is just slow)") from None
            if not envelope.vouches_for(message):
                raise ForeignMessage(_foreign(message, phase))
            if message.get("type") == "phase":
                phase = message["phase"]
                deadline = time.monotonic() + self._limit(phase)
                self.callbacks.phase(point, phase)
            elif message.get("type") == "result":
                return message["result"]

    def _limit(self, phase: str) -> float:
        return self.timing.build_timeout_s if phase in ("start", "build") \
            else self.timing.timeout_s

    # ------------------------------------------------------------ workers

    def _live_worker(self) -> WorkerProcess:
        if self.worker is None:
            self.workers_started += 1
            log = self.log_dir / f"worker-{self.workers_started}.log"
            worker = WorkerProcess(self.device, log)
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
        """Derive the group's speedups, roofline and warnings; the finished rows replace
        the raw ones in self.results, in place (point keys are unique within a run)."""
        if not group:
            return
        finished = finish_group(group, self.env.get("ceilings"))
        self.replace(finished)
        self.callbacks.group_done(finished)

    def replace(self, rows: list[R.Result]) -> None:
        """Put newer versions of results in place (matched by point key, unique in a run)."""
        by_key = {r.key: r for r in rows}
        self.results[:] = [by_key.get(r.key, r) for r in self.results]


class ForeignMessage(Exception):
    """A line on the worker's private channel that gpubench's worker code did not write."""


def _foreign(message: dict, phase: str) -> str:
    what = "a line that is not JSON" if message.get("type") == GARBAGE else \
        "a message without this task's secret"
    sample = message.get("text") if message.get("type") == GARBAGE else message
    return (f"{what} appeared on gpubench's private result channel during '{phase}': the "
            f"variant (or something it ran) wrote to it, so nothing it reports can be "
            f"trusted ({str(sample)[:120]})")


def _group_of(group: list[R.Result]) -> tuple:
    return (group[-1].family, group[-1].dtype, group[-1].shape)


def results_from_payload(point: Point, payload: dict, modes: tuple[str, ...]) -> list[R.Result]:
    """One Result per timing mode from a worker's result message (same check, same build).
    A mode whose timing failed, or whose timed output failed the re-check, fails alone."""
    build = dict(payload.get("build") or {})
    if payload.get("build_log"):
        build["log"] = payload["build_log"]
    timings = payload.get("timings") or {}
    rows = []
    for mode in modes:
        status, error = payload.get("status", R.ERROR), payload.get("error")
        measurement = Measurement.from_dict(timings[mode]) if mode in timings else None
        if status == R.OK and measurement is None:
            status, error = R.ERROR, f"the worker sent no '{mode}' timing"
        elif status == R.OK and measurement.error:
            status = R.FAIL if measurement.recheck_failed else R.ERROR
            error = measurement.error
        rows.append(point.result(mode, status, error=error, measurement=measurement,
                                 check=payload.get("check"), build=build,
                                 device=payload.get("device", ""),
                                 device_work=DeviceWork.from_dict(payload.get("device_work"))))
    return rows

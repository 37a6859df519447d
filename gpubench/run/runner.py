"""The parent side of a run: feed planned points to one or more lanes, survive crashes.

Each lane (lane.py) is one worker on one device: the machine's only one by default, one per
GPU with `--devices`, N CPU workers with `--workers N`, or a Dask worker's GPU with
`--cluster` (cluster.py). Every lane has a thread that takes a point from one shared queue
(schedule.py orders it and picks for each lane) and blocks on its worker; everything else
happens on the main thread, which receives the lanes' events: the run's own events
(records/events.py) are emitted there only, to the listeners that subscribed (tables,
progress, files); groups are finished when their last point is in, whatever order the lanes
finish in, and go through the pipeline's passes (pipeline.py) before they are shown and
saved; Ctrl-C lands there (lanes are then killed, what they had not finished is NOT_RUN).
With several lanes, an interference reference is timed first (interference.py). With a build
phase (build_phase.py), the plan's extensions compile in builder processes from the start,
beside the worker starts and the interference reference; a lane takes the next point whose
build is over (or that builds nothing), so the GPUs measure torch and Triton points while
the builds run. Never prints: the listeners decide what to show.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.records.features.error_site import ERROR_SITE
from gpubench.records.worker_result import WorkerResult
from gpubench.run import timeline
from gpubench.run.build_phase import BuildPhase, BuildsDone, describe_build_phase
from gpubench.run.build_progress import build_progress
from gpubench.run.deriver import Deriver, GroupDerived
from gpubench.run.interference.reference import Interference
from gpubench.run.interference.timing import InterferenceProbe
from gpubench.run.lanes import ceilings_guard
from gpubench.run.lanes.lane import Outcome, default_lane
from gpubench.run.pipeline import Pipeline
from gpubench.run.plan import Point
from gpubench.run.schedule import EMPTY, GroupTracker, LaneState, SharedQueue
from gpubench.run.stream import EventStream
from gpubench.timing.settings import TimingSettings
from gpubench.verdicts.derive import finish_group

# Seconds the main thread waits for a lane's event before looking again: short enough
# that Ctrl-C is handled at once, long enough to cost nothing.
EVENT_POLL_S = 0.2
# Facts of each device that the run document keeps (env["devices"]).
DEVICE_FACTS = ("device_id", "gpu", "gpu_uuid", "host", "sm_count", "memory_bytes", "driver",
                "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "temperature_c",
                "power_limit_w", "cpu", "cpu_threads")


@dataclass(frozen=True)
class LaneEnded:
    """A lane ran out of points (its thread's last word on the runner's queue)."""
    lane: object


class Runner:
    """Runs points on `device` ("cuda" or "cpu") with one TimingSettings for all of them;
    worker logs go to log_dir. `lanes` defaults to one worker on the default device;
    `pipeline`: the passes each finished group goes through (none by default)."""

    def __init__(self, device: str, log_dir: Path, timing: TimingSettings,
                 lanes: list | None = None, pipeline: Pipeline | None = None,
                 builds: BuildPhase | None = None, stream: EventStream | None = None):
        self.device, self.log_dir, self.timing = device, log_dir, timing
        self.builds = builds
        self.stream = stream or EventStream()  # the pipeline's passes speak into it too
        self.pipeline = pipeline or Pipeline()
        self.lanes = lanes or [default_lane(device, log_dir)]
        self.env: dict = {}
        self.devices: dict[str, dict] = {}  # device_id -> the facts of that device
        self.interference: Interference | None = None
        self.results: list[R.Result] = []
        self._events: queue.Queue = queue.Queue()
        self._stopping = threading.Event()
        self.probe = InterferenceProbe(self.lanes, device, replace(timing, modes=self._modes()),
                                       log_dir, builds, self._stopping,
                                       lambda facts: self._events.put(E.WorkerStarted(facts)))
        self._ceilings: dict[str, dict] = {}  # device model -> its measured ceilings
        self._unsaved: list[threading.Event] = []  # lanes waiting for their point's save
        # Groups whose last point is in, finished (derived, shown, passed) once the lanes
        # waiting for a save are free again (a group's CIs and table cost ~0.1-0.2 s every
        # lane would wait for); on a CPU that work competes with timed code: it goes first.
        self._finishing: list[list[R.Result]] = []
        self._overlap = device != "cpu"
        # On a GPU, groups are derived on a thread of their own (deriver.py says why).
        self._deriver: Deriver | None = None
        self._deriving: list[list[R.Result]] = []  # sent to the deriver, not back yet
        self._plan: list[Point] = []  # run()'s points: a lane's PointDone names its index
        self._started = False  # a point handed out (the timeline marks the first)

    def subscribe(self, listener: Callable[[E.Event], None]) -> None:
        """`listener(event)` for every event of the run, after those subscribed before."""
        self.stream.subscribe(listener)

    def emit(self, event: E.Event) -> None:
        self.stream.emit(event)

    def _note_env(self, **facts) -> None:
        """Facts into the run's env, and the whole env to the writers (RunFacts)."""
        self.env.update(facts)
        self.emit(E.RunFacts(dict(self.env)))

    def run(self, points: list[Point]) -> list[R.Result]:
        """Run every point; on KeyboardInterrupt, mark the rest NOT_RUN and re-raise."""
        self._plan = points
        plan_index = {id(p): i for i, p in enumerate(points)}
        tracker = GroupTracker(points)
        open_groups: dict[tuple, dict[int, list[R.Result]]] = {}
        threads: list[threading.Thread] = []
        try:
            self._start_builds()
            timeline.mark("parent: build phase started")
            self.pipeline.before_run()
            probed = self.probe.time(points) if len(self.lanes) > 1 else None
            self._flush_device_events()  # the devices it saw, before the lanes take points
            timeline.mark("parent: interference reference ready")
            if probed is not None and not self._overlap:  # on a CPU, not beside timed code
                self._take_interference(self.probe.assess(*probed))
                probed = None
            shared = SharedQueue(points, len(self.lanes), self.builds is not None)
            threads = [threading.Thread(target=self._lane_loop, args=(lane, shared),
                                        name=f"gpubench-lane-{lane.slot.label}", daemon=True)
                       for lane in self.lanes]
            for thread in threads:
                thread.start()
            if probed is not None:  # its bootstrap CIs (~0.5 s) while the lanes measure
                self._take_interference(self.probe.assess(*probed))
            self._dispatch(len(threads), tracker, open_groups)
            self._take_interference(self.probe.assess_reused(final=True))
            if self.builds is not None:  # final figures: rebuilds by workers counted
                self._note_env(build_phase=self.builds.summary())
        except KeyboardInterrupt as stop:
            self._stopping.set()
            for lane in self.lanes:
                lane.kill()
            self._join(threads)
            self._drain(tracker, open_groups)  # points that finished meanwhile still count
            self._not_run(points, plan_index, str(stop) or "interrupted (Ctrl-C)",
                          open_groups)
            self._sort(plan_index, points)
            raise
        finally:
            if self.builds is not None:
                self.builds.stop()
            self._stop_lanes()
        self._sort(plan_index, points)
        return self.results

    # ------------------------------------------------------------ the main thread

    def _dispatch(self, lanes: int, tracker: GroupTracker, open_groups: dict) -> None:
        """Handle the lanes' events until every lane has run out of points; Idle is
        emitted each time the queue runs dry (the saver saves then: with several lanes,
        points finishing together cost one save, not one each)."""
        running = lanes
        while running or self._deriving:
            try:
                event = self._events.get(timeout=EVENT_POLL_S)
            except queue.Empty:
                continue
            running -= self._handle(event, tracker, open_groups)
            self._take_interference(self.probe.assess_reused())
            if self._events.empty():
                if not self._overlap:
                    self._finish_groups()
                self.emit(E.Idle())
                for saved in self._unsaved:  # their lanes may take their next points now
                    saved.set()
                self._unsaved.clear()
                if self._overlap:
                    self._derive_groups()
        self._finish_groups()

    def _finish_groups(self) -> None:
        """Finish the groups that completed since the last call, in completion order,
        here and now (those sent to the deriver too: after a Ctrl-C, its answers are no
        longer read)."""
        self._finishing[:0], self._deriving = self._deriving, []
        while self._finishing:  # popped once finished: a Ctrl-C in between loses no group
            self._finish_group(self._finishing[0])
            self._finishing.pop(0)

    def _derive_groups(self) -> None:
        """Send the groups that completed to the deriver (in order); their rows come back
        as "derived" events, shown and passed here."""
        if self._deriver is None and self._finishing:
            self._deriver = Deriver(self._events)
        while self._finishing:
            group = self._finishing.pop(0)
            self._deriving.append(group)
            self._deriver.submit(group, self._ceilings_for(group))

    def _derived(self, group: list[R.Result], finished: list[R.Result]) -> None:
        """The deriver's rows of `group`: the pipeline, the table and the save."""
        if not any(g is group for g in self._deriving):  # finished here already (Ctrl-C)
            return
        self._deriving = [g for g in self._deriving if g is not group]
        self._finish_derived(finished)

    def _drain(self, tracker: GroupTracker, open_groups: dict) -> None:
        for event in self._pending_events():
            if isinstance(event, E.PointDone):
                self._handle(event, tracker, open_groups)
        self._finish_groups()

    def _take_interference(self, found: Interference | None) -> None:
        """The reference's assessment, into the run's env and said (None: not yet)."""
        if found is None:
            return
        self.interference = found
        self._note_env(interference=found.to_dict())
        self.emit(E.Interference(found.summary(), found.warning()))

    def _flush_device_events(self) -> None:
        """The devices' facts now; other events (a build phase's end) back on the queue."""
        others = []
        for event in self._pending_events():
            if isinstance(event, E.WorkerStarted):
                self._note_device(event.env)
            else:
                others.append(event)
        for event in others:
            self._events.put(event)

    def _pending_events(self):
        """The events queued so far, without waiting for more."""
        while True:
            try:
                yield self._events.get_nowait()
            except queue.Empty:
                return

    def _handle(self, event, tracker: GroupTracker, open_groups: dict) -> int:
        """Act on one event of a lane, the build phase or the deriver; 1 when it says a
        lane has finished. The lanes' own events go on to the listeners as they are."""
        match event:
            case E.PointStarted() if not self._started:
                self._started = True
                timeline.mark("parent: first point handed out")
                self.emit(event)
            case E.PointStarted() | E.Phase():
                self.emit(event)
            case E.WorkerStarted(env=facts):
                self._note_device(facts)
            case E.PointDone(rows=rows, index=index, saved=saved):
                self._unsaved.append(saved)
                self.results.extend(rows)
                self.emit(event)
                point = self._plan[index]
                open_groups.setdefault(point.group, {})[index] = rows
                if tracker.done(point):
                    group = open_groups.pop(point.group)
                    self._finishing.append([r for i in sorted(group) for r in group[i]])
            case GroupDerived(failure=BaseException() as failure):
                raise failure
            case GroupDerived(group=group, finished=finished):
                self._derived(group, finished)
            case BuildsDone(summary=summary):
                self._builds_done(summary)
            case LaneEnded():
                return 1
        return 0

    def _note_device(self, env: dict) -> None:
        """A device's facts, from the first hello of its worker; the run's env is the
        first device's (with every device listed when there are several)."""
        device_id = env.get("device_id", "")
        if device_id in self.devices:
            return
        self.devices[device_id] = {k: env.get(k) for k in DEVICE_FACTS if k in env}
        name = _device_fields(env)["device_name"]
        if env.get("ceilings") and name not in self._ceilings:
            self._ceilings[name] = env["ceilings"]
        first = len(self.devices) == 1
        if first:  # run-level facts noted before any worker said hello (build_phase) stay
            self.env = {**env, **self.env}
        if len(self.lanes) > 1:
            self.env["devices"] = list(self.devices.values())
        self._note_env()
        if first:
            self.emit(E.WorkerStarted(self.env))

    def _not_run(self, points: list[Point], plan_index: dict, reason: str,
                 open_groups: dict) -> None:
        """Every point without a result becomes NOT_RUN; groups with any result finish."""
        done = {r.key for r in self.results}
        for point in points:
            if point.key(self._modes()[0]) in done:
                continue
            rows = self._expand(point, R.NOT_RUN, reason)
            self.results.extend(rows)
            self.emit(E.NotRun(rows))
            if point.group in open_groups:
                open_groups[point.group][plan_index[id(point)]] = rows
        for group in open_groups.values():
            self._finish_group([r for i in sorted(group) for r in group[i]])

    def _sort(self, plan_index: dict, points: list[Point]) -> None:
        """Results in plan order, whatever order the lanes finished in."""
        order = {p.key(mode): plan_index[id(p)] for p in points for mode in self._modes()}
        self.results.sort(key=lambda r: order.get(r.key, len(order)))

    # ------------------------------------------------------------ lane threads

    def _lane_loop(self, lane, shared: SharedQueue) -> None:
        """Take points until none is left; every outcome goes to the main thread."""
        state = LaneState()  # the kinds and groups this lane's worker has run
        try:
            while (item := self._take(shared, state)) is not None:
                index, point = item
                self._events.put(E.PointStarted(point.ref()))
                rows = self._contained_point(lane, index, point)
                if self._stopping.is_set():  # killed by Ctrl-C: the main thread decides
                    return
                # The next point waits until this one is saved (a `kill -9` then costs at
                # most the points in progress); points done together on lanes share a save.
                saved = threading.Event()
                self._events.put(E.PointDone(rows, index, saved))
                while not saved.wait(EVENT_POLL_S):
                    if self._stopping.is_set():
                        return
        finally:
            if not self._stopping.is_set():
                # Nothing is left for this lane (no point is ever queued again): its worker
                # ends now, beside the lanes still measuring, not after the last of them.
                # Four H200 workers' exits take 0.53 s at the end of a run, one alone
                # 0.2 s (the run's timeline, docs/journal/perf-notes.md).
                with contextlib.suppress(Exception):
                    lane.stop()
            self._events.put(LaneEnded(lane))

    def _take(self, shared: SharedQueue, state: LaneState) -> tuple[int, Point] | None:
        """The next point this lane runs (SharedQueue.take, for a lane whose worker has run
        what `state` holds), among those whose build is over or that build nothing, waiting for a
        build only when nothing else is left; None when none is left or the run stops."""
        while not self._stopping.is_set():
            item = shared.take(state, lambda point: self.builds is None or
                               self.builds.ready(point))
            if item is EMPTY:
                return None
            if item is not None:
                return item
            self.builds.wait(EVENT_POLL_S)
        return None

    def _contained_point(self, lane, index: int, point: Point) -> list[R.Result]:
        """The point's results; a fault in turning its outcome into rows is its ERROR, so
        that this lane thread lives on and every point gets a status."""
        try:
            return self._run_point(lane, index, point)
        except Exception as exc:
            if self._stopping.is_set():
                return []
            return self._expand(point, R.ERROR, f"gpubench could not record this point: "
                                                f"{type(exc).__name__}: {exc}")

    def _run_point(self, lane, index: int, point: Point) -> list[R.Result]:
        """The point's results, one per timing mode."""
        if point.skip:
            return self._expand(point, R.SKIPPED, point.skip)
        if point.spec_error:  # the family's cost model failed here: nothing to run
            return self._expand(point, R.ERROR, point.spec_error)
        failed_build = self.builds.failed(point) if self.builds is not None else None
        if failed_build is not None:  # said once by the build phase, for each of its points
            return self._from_outcome(point, failed_build, {})
        try:
            with build_progress(lane, point.ref(), self._events.put) as on_phase:
                outcome = lane.execute(point.task(index, self.timing), self.timing.timeout_s,
                                       self.timing.build_timeout_s, on_phase)
        except Exception as exc:  # a lane killed under it (Ctrl-C), or a bug: one point
            if self._stopping.is_set():
                return []
            outcome = Outcome(failure=R.ERROR, error=f"{type(exc).__name__}: {exc}")
        device = outcome.device or lane.env
        if device:
            self._events.put(E.WorkerStarted(device))
        built = None
        if self.builds is not None and outcome.result is not None:
            self.builds.note_worker_build(point, outcome.result.build)
            built = self.builds.build_for_row(point)
        if built is not None:
            build = outcome.result.build.overlaid(built)  # the worker's notes stay
            outcome = replace(outcome, result=replace(outcome.result, build=build))
        return self._from_outcome(point, outcome, device)

    def _from_outcome(self, point: Point, outcome: Outcome, device: dict) -> list[R.Result]:
        if outcome.failure:
            return self._expand(point, outcome.failure, outcome.error, device)
        return results_from_worker(point, outcome.result, self._modes(), device)

    # ------------------------------------------------------------ the build phase

    def _start_builds(self) -> None:
        if self.builds is not None:  # its progress (PhaseOf) and its end come to the queue
            self.builds.start(self._events.put)

    def _builds_done(self, summary: dict) -> None:
        """The phase's figures go to the run's env (results.json) and to the console."""
        self._note_env(build_phase=summary)
        self.emit(E.Message(describe_build_phase(summary)))

    # ------------------------------------------------------------ helpers

    def _modes(self) -> tuple[str, ...]:
        from gpubench.timing.timers import modes_for_device

        return modes_for_device(self.timing.modes, self.device)

    def _expand(self, point: Point, status: str, error: str | None,
                device: dict | None = None) -> list[R.Result]:
        where = _device_fields(device)
        return [replace(point.result(mode, status, error=error), **where)
                for mode in self._modes()]


    def _stop_lanes(self) -> None:
        """Every lane's worker ended at once; then a rewritten ceilings cache is undone."""
        timeline.mark("parent: last point back, stopping lanes")
        threads = [threading.Thread(target=lane.stop, daemon=True) for lane in self.lanes]
        for thread in threads:
            thread.start()
        self._join(threads)
        timeline.mark("parent: lanes stopped")
        for warning in ceilings_guard.verify():
            self.emit(E.Message(f"warning: {warning}", soft_wrap=True))

    @staticmethod
    def _join(threads: list[threading.Thread]) -> None:
        for thread in threads:
            thread.join(timeout=15)

    def _finish_group(self, group: list[R.Result]) -> None:
        """Derive the group's speedups, roofline and warnings, then the pipeline's passes;
        the finished rows replace the raw ones in self.results, in place (point keys are
        unique within a run). GroupDone shows the group, GroupComplete saves it."""
        if group:
            self._finish_derived(finish_group(group, self._ceilings_for(group)))

    def _finish_derived(self, derived: list[R.Result]) -> None:
        shown = self.pipeline.before_table(derived)
        self._replace(shown)
        self.emit(E.GroupDone(shown))
        complete = self.pipeline.after_table(shown)
        self._replace(complete)
        self.emit(E.GroupComplete(complete))

    def _ceilings_for(self, group: list[R.Result]) -> dict | None:
        """The ceilings of the device model that measured the group's rows (the first
        row's with a known device), else the run's first device's."""
        named = next((r.device_name for r in group if r.device_name in self._ceilings), None)
        return self._ceilings[named] if named else self.env.get("ceilings")

    def _replace(self, rows: list[R.Result]) -> None:
        """Put newer versions of results in place (matched by point key, unique in a run)."""
        by_key = {r.key: r for r in rows}
        self.results[:] = [by_key.get(r.key, r) for r in self.results]



def _device_fields(device: dict | None) -> dict:
    """Which device measured a result: its id and its model."""
    if not device:
        return {}
    return {"device_id": device.get("device_id", ""),
            "device_name": device.get("gpu") or device.get("cpu") or ""}


def results_from_worker(point: Point, worker: WorkerResult, modes: tuple[str, ...],
                        device: dict | None = None) -> list[R.Result]:
    """One Result per timing mode from what the worker did (same check, same build).
    A mode whose timing failed, or whose timed output failed the re-check, fails alone."""
    rows = []
    for mode in modes:
        status, error = worker.status, worker.error
        measurement = worker.measurements.get(mode)
        if status == R.OK and measurement is None and not worker.untimed:
            status, error = R.ERROR, f"the worker sent no '{mode}' timing"
        elif status == R.OK and measurement is not None and measurement.error:
            status = R.FAIL if measurement.recheck_failed else R.ERROR
            error = measurement.error
        row = point.result(mode, status, error=error, measurement=measurement,
                           check=worker.check, build=worker.build,
                           device=worker.device, device_work=worker.device_work)
        if worker.error_site and error == worker.error:  # the row's error is the worker's
            row = row.with_extra(ERROR_SITE, worker.error_site.to_dict())
        rows.append(replace(row, **_device_fields(device)))
    return rows

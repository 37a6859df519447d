"""The runner's interference reference (interference.py judges it): timed on all lanes at
once, then on each lane alone, before the run's points. A part of Runner (runner.py),
apart because it is one feature: its lanes, events and timing are the runner's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.run.interference import cache as interference_cache
from gpubench.run.interference.reference import assess
from gpubench.run.lanes.lane import start_quietly
from gpubench.run.plan import Point
from gpubench.timing.settings import TimingSettings

# The interference reference is timed with short settings: ~0.2 s per point with its
# check, ~1.5 s in all for two devices (alone on each in turn, then together); 30 ms of
# samples is still ~20 calls of the 1.6 ms matmul and thousands of the launch-bound one.
REFERENCE_TIMING = {"warmup_s": 0.03, "min_time_s": 0.03, "max_time_s": 0.1}
# Seconds between looks at a lane thread being joined: Ctrl-C is handled at once.
JOIN_POLL_S = 0.2


class InterferenceTiming:
    """Runner's methods for the interference reference (needs its lanes, timing, device,
    log_dir, env, builds, _interference_source, _interference_builds, _reused_reference,
    _events, _stopping, emit, _modes, _note_device and _pending_events)."""

    def _time_interference(self, points: list[Point]) -> tuple[dict, dict] | None:
        """The reference timed on each lane alone, in turn, then on all lanes at once:
        (alone, together) samples; those of a recent run on the same GPUs where there is
        one (interference_cache.py). None when such a run's samples were found before any
        worker started: they are assessed once every lane's worker has said which GPU it
        has (_assess_reused), and no lane waits for another's start meanwhile."""
        from gpubench.run.reference import reference_points

        probes = reference_points(self.device, points[0].seed if points else 0)
        timing = replace(self.timing, modes=self._modes()[:1], **REFERENCE_TIMING)
        reference = _reference_id(probes, timing)
        early = self._early_facts()
        kept = early and self._recent(early, reference)
        if kept:
            self._reused_reference = kept
            return None
        self._on_every_lane(start_quietly)  # worker starts (~5 s each) side by side
        facts = [lane.env for lane in self.lanes]
        ids = interference_cache.gpu_ids(facts) if self.device == "cuda" else None
        kept = ids and self._recent(facts, reference)
        if kept:
            return kept.samples_for(ids)
        alone: dict[tuple[str, str], list[float]] = {}
        together: dict[tuple[str, str], list[float]] = {}
        since = time.monotonic()
        # Together first: each worker's first call of the reference also makes its inputs
        # and float64 references (~4 s for 8192^3 on an H200), paid side by side there;
        # the alone calls then find them made (~0.2 s a device).
        self._on_every_lane(lambda lane: together.update(self._time_probes(lane, probes,
                                                                           timing)))
        for lane in self.lanes:
            alone.update(self._time_probes(lane, probes, timing))
        builds = self.builds.compiled_during(since) if self.builds is not None else 0
        self._interference_builds = builds
        key = ids and interference_cache.key_for(facts, self._lane_kind(), reference)
        if key and alone and together and not self._stopping.is_set():
            interference_cache.store(key, alone, together, ids, self.log_dir.name, builds)
        return alone, together

    def _early_facts(self) -> list[dict] | None:
        """The lanes' GPUs' facts before their workers start (interference_cache.early_facts):
        only for GPU lanes on this host (a remote cluster's lanes are on other nodes)."""
        if self.device != "cuda" or not all(getattr(lane, "on_this_host", True)
                                            for lane in self.lanes):
            return None
        return interference_cache.early_facts(len(self.lanes))

    def _lane_kind(self) -> str:
        return type(self.lanes[0]).__name__

    def _recent(self, facts: list[dict], reference: str):
        """A recent run's reference for lanes with these facts (noted as this run's
        source), or None."""
        key = interference_cache.key_for(facts, self._lane_kind(), reference)
        now = time.time()
        kept = key and interference_cache.recent(key, now, interference_cache.max_age_s())
        if kept:
            self._interference_source = kept.describe(now)
            self._interference_builds = kept.beside_builds
        return kept or None

    def _assess_reused(self, final: bool = False) -> None:
        """Assess the reference found before the workers started, once every lane's worker
        has said which GPU it has (at the run's end, with the lanes that did)."""
        kept = self._reused_reference
        if kept is None:
            return
        facts = [lane.env for lane in self.lanes if lane.env.get("gpu_uuid")]
        if not (final or len(facts) == len(self.lanes)):
            return
        self._reused_reference = None
        self._assess_interference(*kept.samples_for(
            {env["gpu_uuid"]: env.get("device_id", "") for env in facts}))

    def _assess_interference(self, alone: dict, together: dict) -> None:
        self.interference = assess(alone, together, len(self.lanes),
                                   self._interference_source, self._interference_builds)
        self.env["interference"] = self.interference.to_dict()
        self.emit(E.Interference(self.interference.summary(), self.interference.warning()))

    def _time_probes(self, lane, probes: list[Point], timing: TimingSettings) -> dict:
        samples = {}
        for index, probe in enumerate(probes):
            if self._stopping.is_set():
                break
            outcome = lane.execute(probe.task(-1 - index, timing), timing.timeout_s,
                                   timing.build_timeout_s)
            device = outcome.device or lane.env
            if device:
                self._events.put(("device", device))
            worker = outcome.result
            timed = worker.measurements.get(timing.modes[0]) if worker else None
            if timed and worker.status == R.OK:
                label = f"matmul {probe.shape.label()} {probe.dtype}"
                samples[(device.get("device_id", lane.slot.label), label)] = \
                    list(timed.samples_s)
        return samples

    def _on_every_lane(self, action: Callable) -> None:
        """`action(lane)` on every lane at once; returns when all are done."""
        threads = [threading.Thread(target=action, args=(lane,), daemon=True)
                   for lane in self.lanes]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # a join with a timeout lets Ctrl-C through
                thread.join(JOIN_POLL_S)
        self._flush_device_events()

    def _flush_device_events(self) -> None:
        """The devices' facts now; any other event (the build phase's end, which can come
        during the reference) goes back on the queue for the dispatch loop."""
        others = []
        for event in self._pending_events():
            if event[0] == "device":
                self._note_device(event[1])
            else:
                others.append(event)
        for event in others:
            self._events.put(event)


def _reference_id(probes: list[Point], timing: TimingSettings) -> str:
    """What the reference is: its points, its timing and its spec's text (an edit of either
    makes earlier samples another reference's)."""
    spec = probes[0].family.directory / "spec.py" if probes else None
    text = spec.read_text() if spec is not None and spec.is_file() else ""
    shapes = [p.shape.label() for p in probes]
    return repr((shapes, [p.dtype for p in probes], timing.modes, REFERENCE_TIMING, text))

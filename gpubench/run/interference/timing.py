"""The run's interference reference (reference.py judges it): timed on all lanes at once,
then on each lane alone, before the run's points. An object the runner (runner.py) holds
and asks: it is given the lanes, timing and flags it needs, and reports devices back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpubench.records import result as R
from gpubench.run.interference import cache as interference_cache
from gpubench.run.interference.reference import Interference, assess
from gpubench.run.lanes.lane import start_quietly
from gpubench.run.plan import Point
from gpubench.timing.settings import TimingSettings

# The interference reference is timed with short settings: ~0.2 s per point with its
# check, ~1.5 s in all for two devices (alone on each in turn, then together); 30 ms of
# samples is still ~20 calls of the 1.6 ms matmul and thousands of the launch-bound one.
REFERENCE_TIMING = {"warmup_s": 0.03, "min_time_s": 0.03, "max_time_s": 0.1}
# Seconds between looks at a lane thread being joined: Ctrl-C is handled at once.
JOIN_POLL_S = 0.2


@dataclass
class InterferenceProbe:
    """The interference reference of one run: timed on its lanes (or a recent run's samples
    reused), then assessed (reference.py). What it needs of the runner is given, not
    reached for: the lanes, the device and mode, where logs go, the build phase (builds
    that compiled meanwhile are counted), the stop flag, and where the devices' facts go
    (`device_seen`: the runner notes each device's first hello)."""

    lanes: list
    device: str
    timing: TimingSettings  # the run's, with its first mode first
    log_dir: Path
    builds: object | None
    stopping: threading.Event
    device_seen: Callable[[dict], None]
    source: str = ""  # where its samples were reused from, if they were
    builds_beside: int = 0  # builds that compiled while it was measured
    reused: object | None = None  # found before the workers started: assessed later

    def time(self, points: list[Point]) -> tuple[dict, dict] | None:
        """The reference timed on each lane alone, in turn, then on all lanes at once:
        (alone, together) samples; those of a recent run on the same GPUs where there is
        one (cache.py). None when such a run's samples were found before any worker
        started: they are assessed once every lane's worker has said which GPU it has
        (assess_reused), and no lane waits for another's start meanwhile."""
        from gpubench.run.reference import reference_points

        probes = reference_points(self.device, points[0].seed if points else 0)
        timing = replace(self.timing, modes=self.timing.modes[:1], **REFERENCE_TIMING)
        reference = _reference_id(probes, timing)
        early = self._early_facts()
        kept = early and self._recent(early, reference)
        if kept:
            self.reused = kept
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
        self.builds_beside = self.builds.compiled_during(since) if self.builds is not None \
            else 0
        key = ids and interference_cache.key_for(facts, self._lane_kind(), reference)
        if key and alone and together and not self.stopping.is_set():
            interference_cache.store(key, alone, together, ids, self.log_dir.name,
                                     self.builds_beside)
        return alone, together

    def assess(self, alone: dict, together: dict) -> Interference:
        return assess(alone, together, len(self.lanes), self.source, self.builds_beside)

    def assess_reused(self, final: bool = False) -> Interference | None:
        """The reference found before the workers started, assessed once every lane's
        worker has said which GPU it has (at the run's end, with the lanes that did);
        None before then, or when there is none."""
        kept = self.reused
        if kept is None:
            return None
        facts = [lane.env for lane in self.lanes if lane.env.get("gpu_uuid")]
        if not (final or len(facts) == len(self.lanes)):
            return None
        self.reused = None
        return self.assess(*kept.samples_for(
            {env["gpu_uuid"]: env.get("device_id", "") for env in facts}))

    def _early_facts(self) -> list[dict] | None:
        """The lanes' GPUs' facts before their workers start (cache.early_facts): only for
        GPU lanes on this host (a remote cluster's lanes are on other nodes)."""
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
            self.source = kept.describe(now)
            self.builds_beside = kept.beside_builds
        return kept or None

    def _time_probes(self, lane, probes: list[Point], timing: TimingSettings) -> dict:
        samples = {}
        for index, probe in enumerate(probes):
            if self.stopping.is_set():
                break
            outcome = lane.execute(probe.task(-1 - index, timing), timing.timeout_s,
                                   timing.build_timeout_s)
            device = outcome.device or lane.env
            if device:
                self.device_seen(device)
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


def _reference_id(probes: list[Point], timing: TimingSettings) -> str:
    """What the reference is: its points, its timing and its spec's text (an edit of either
    makes earlier samples another reference's)."""
    spec = probes[0].family.directory / "spec.py" if probes else None
    text = spec.read_text() if spec is not None and spec.is_file() else ""
    shapes = [p.shape.label() for p in probes]
    return repr((shapes, [p.dtype for p in probes], timing.modes, REFERENCE_TIMING, text))

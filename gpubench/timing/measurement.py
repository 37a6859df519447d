"""Measurement: everything one timer measured for one point in one mode, kept whole.

Built by a timer (gpubench/timers), completed by the worker with the clocks it
watched and the re-check of the timed calls' output, sent to the parent as a
dict and rebuilt there by the codec (`upgrade` reads older files' forms): the same type
on both sides of the pipe and in results.json, so nothing the worker measured is dropped
on the way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from gpubench.codec import Record
from gpubench.timing.check_result import CheckResult
from gpubench.timing.clocks import ClockReport
from gpubench.timing.hostload import HostLoad


@dataclass(frozen=True)
class FreshEvidence(Record):
    """Calls on inputs the variant never saw, each beside a call on inputs it had seen
    (run/worker/fresh_probe.py): the evidence verdicts/behaviour.py reads for a shortcut that
    skips work on repeated inputs."""

    fresh_s: tuple[float, ...] = ()
    repeat_s: tuple[float, ...] = ()
    host_load: HostLoad | None = None  # on a CPU: what else ran meanwhile
    # Inside a loop: where each fresh call sat among the stretch's calls (fresh and seen,
    # in call order), so that a verdict reads each beside its own neighbours; empty where
    # the order is unknown (a graph's replays, the probe, older records).
    fresh_at: tuple[int, ...] = ()

    def then(self, later: FreshEvidence) -> FreshEvidence:
        """This stretch followed by a later one (ab's rounds): the later positions shifted
        past this stretch's calls, so each fresh call keeps its own neighbours."""
        shift = len(self.fresh_s) + len(self.repeat_s)
        return FreshEvidence(self.fresh_s + later.fresh_s, self.repeat_s + later.repeat_s,
                             self.host_load or later.host_load,
                             self.fresh_at + tuple(shift + at for at in later.fresh_at))

    def calls(self) -> list[tuple[float, bool]] | None:
        """The stretch's calls in order as (seconds, fresh?), or None where the order is
        not known, or where the places cannot be (a record read back: repeated or out of
        the stretch's range)."""
        count = len(self.fresh_s) + len(self.repeat_s)
        if len(self.fresh_at) != len(self.fresh_s) or \
                len(set(self.fresh_at)) != len(self.fresh_at) or \
                not all(0 <= at < count for at in self.fresh_at):
            return None
        fresh = dict(zip(self.fresh_at, self.fresh_s, strict=True))
        seen = iter(self.repeat_s)
        return [(fresh[i], True) if i in fresh else (next(seen), False) for i in range(count)]


@dataclass(frozen=True)
class Measurement(Record):
    mode: str
    method: str | None = None
    samples_s: tuple[float, ...] = ()
    warmup_calls: int | None = None
    warmup_s: float | None = None  # wall time spent warming up
    stop_reason: str | None = None
    sampling_s: float | None = None  # wall time spent taking the samples
    details: dict = field(default_factory=dict)  # timer specifics (event-pair cost, batch sizes)
    target_rel_ci: float | None = None
    clocks: ClockReport | None = None  # SM clock range, throttle reasons (NVML)
    recheck: CheckResult | None = None  # the worst re-check of the timed calls' outputs
    error: str | None = None  # this mode failed (timer error, or the re-check failed)
    recheck_failed: bool = False
    fresh: FreshEvidence | None = None  # the fresh-input probe's calls (run/worker/)
    host_load: HostLoad | None = None  # on a CPU: what else ran while it was timed
    # Timed calls on never-seen inputs made inside the loop (run/worker/rotation.py), beside
    # the calls on seen inputs of the same stretch: all among samples_s; in graph mode a
    # graph captured on never-seen sets, replayed beside the first samples (timers/graph.py).
    fresh_in_loop: FreshEvidence | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples_s", tuple(float(s) for s in self.samples_s))

    def below_the_window(self) -> str | None:
        """Why the samples are no time, when some fell below zero: a timer subtracts its
        empty window's own cost (an event pair, an empty graph's launch), and calls that
        leave (next to) nothing on the device come out under it. None: every sample >= 0."""
        under = [s for s in self.samples_s if s < 0]
        if not under:
            return None
        return (f"{len(under)} of {len(self.samples_s)} {self.mode} samples timed below the "
                f"empty window's own cost (down to {min(under) * 1e9:.0f} ns): the calls "
                "leave (next to) no work on the device, so there is no time to report")

    def at_least_zero(self) -> Measurement:
        """A copy whose negative samples are 0 (with below_the_window's reason kept as the
        mode's error, the samples are what a file may hold)."""
        return replace(self, samples_s=tuple(max(s, 0.0) for s in self.samples_s))

    def completed(self, **changes) -> Measurement:
        """A copy with the worker's additions (clocks, recheck, error)."""
        return replace(self, **changes)

    @classmethod
    def upgrade(cls, data: Mapping) -> Mapping:
        """Refuses samples that are no times (check_samples). A file from before `fresh`
        and `host_load` holds the probe's calls and the host's load in `details`: moved
        to their fields."""
        check_samples(data.get("samples_s", ()))
        details = dict(data.get("details") or {})
        if "fresh_s" in details and data.get("fresh") is None:
            data = {**data, "details": details, "fresh": {
                "fresh_s": details.pop("fresh_s"), "repeat_s": details.pop("repeat_s", ()),
                "host_load": details.pop("fresh_host_load", None)}}
        if "host_load" in details and data.get("host_load") is None:
            data = {**data, "details": details, "host_load": details.pop("host_load")}
        return data


def in_loop_evidence(found: FreshEvidence | None) -> FreshEvidence | None:
    """What a rotation found in its loop, where it holds a fresh call (None: none)."""
    return found if found is not None and found.fresh_s else None


def check_samples(samples, name: str = "samples_s") -> None:
    """Samples read from a file are times: a NaN or negative one (an edited or corrupted
    file) would flow into every median and compare as '+nan%', so it is refused."""
    if not isinstance(samples, list | tuple):
        raise ValueError(f"{name} is a {type(samples).__name__}, not a list of times")
    for sample in samples:
        if isinstance(sample, bool) or not isinstance(sample, int | float):
            raise ValueError(f"a timing sample is {sample!r}, not a number of seconds")
        if not math.isfinite(sample) or sample < 0:
            raise ValueError(f"a timing sample is {sample!r} s: samples are finite times >= 0")

"""What the runner's own threads tell its dispatch loop (runner.py): one typed message per
kind, as the runner's listeners get typed events (records/events.py). Lanes, the deriver,
the build phase and the interference probe put these on the runner's queue; only the
dispatch loop reads it, on the main thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gpubench.run.plan import Point


@dataclass(frozen=True)
class Started:
    """A lane began a point."""

    point: Point


@dataclass(frozen=True)
class PhaseOf:
    """A point's worker entered a phase (build, check, time, ...), or, with a detail, is
    still in it: what its build does now (build_progress.py)."""

    point: Point
    phase: str
    detail: str = ""


@dataclass(frozen=True)
class DeviceSeen:
    """A worker's first hello: its device's facts."""

    facts: dict


@dataclass(frozen=True)
class PointFinished:
    """A point's rows; its lane waits on `saved` before it takes the next point."""

    index: int
    point: Point
    rows: list
    saved: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class GroupDerived:
    """The deriver's rows for a group (`failure`: what it raised instead)."""

    group: list
    finished: list | None
    failure: BaseException | None = None


@dataclass(frozen=True)
class BuildsDone:
    """The build phase ended: its summary."""

    summary: dict


@dataclass(frozen=True)
class LaneEnded:
    """A lane ran out of points."""

    lane: object

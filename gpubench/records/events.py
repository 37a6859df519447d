"""What a run says while it goes: the events the runner emits and its listeners read.

The runner (run/runner.py) emits them on the main thread, in order, into the run's
stream (run/stream.py); the live view, the console lines and the run folder's saver
(report/live.py, store/run_saver.py) subscribe, and the saver keeps its own copy of the
rows from them: no writer reads the runner. The
lanes, the build phase and the workers' hellos speak the same events to the runner (its
queue), which passes them on: one vocabulary from a worker to a view.
They live here, below report/, so that a view knows events and results, never the
runner: an event carries a point's identity (PointRef), not the run layer's Point.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PointRef:
    """Which point an event is about, as a view names it."""

    family: str
    variant: str
    shape: str  # its label: 'n=2^20', 'M=256 N=128 K=64'
    dtype: str
    skipped: bool = False

    def label(self) -> str:
        """'square/cuda n=2^20 float32'."""
        return f"{self.family}/{self.variant} {self.shape} {self.dtype}"


@dataclass(frozen=True)
class PointStarted:
    point: PointRef


@dataclass(frozen=True)
class Phase:
    """A point entered a phase of its work: 'building', 'checking', 'timing cold', ...;
    with a detail, it is still in that phase, doing this ('40 s: ninja [1/3]: compiling
    main.cpp'): a long build's progress."""

    point: PointRef
    phase: str
    detail: str = ""


@dataclass(frozen=True)
class PointDone:
    """A point's results, one per timing mode (empty for a point killed by Ctrl-C). From a
    lane, also its place in the plan and `saved`, which the runner sets once the rows are
    saved: the lane takes its next point only then (a `kill -9` costs at most the points
    in progress). Views read the rows only."""

    rows: list
    index: int = -1
    saved: threading.Event | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class GroupDone:
    """A group finished: derived, and the passes that precede its table applied. Show it."""

    group: list


@dataclass(frozen=True)
class GroupComplete:
    """Every pass has run on the group (those that follow its table too). Save it."""

    group: list


@dataclass(frozen=True)
class WorkerStarted:
    """A worker said hello: its device's facts. The runner notes each device and tells
    the views once, for the first, with the run's env."""

    env: dict


@dataclass(frozen=True)
class RunFacts:
    """The run's env changed (a device said hello, the interference reference or the
    build phase reported): the whole env, a copy, for the writers that save it."""

    env: dict


@dataclass(frozen=True)
class NotRun:
    """Rows a stop (Ctrl-C, SIGTERM) left without a measurement, NOT_RUN with its reason:
    the writers save them as they are; the views have shown the stop already."""

    rows: list


@dataclass(frozen=True)
class Interference:
    """Several lanes: what the interference reference showed, and a warning if it slowed."""

    summary: str
    warning: str | None = None


@dataclass(frozen=True)
class Idle:
    """The runner has nothing more to hand out until a lane reports: a moment to save."""


@dataclass(frozen=True)
class Message:
    """Something a pass has to say (a skipped feature, a tool's failure, a summary table):
    `text` is a string or a rich renderable, printed as it is (never as markup)."""

    text: Any
    soft_wrap: bool = False


Event = (PointStarted | Phase | PointDone | GroupDone | GroupComplete | WorkerStarted
         | RunFacts | NotRun | Interference | Idle | Message)

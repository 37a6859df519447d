"""The run folder's writer during a run: results.json and results.csv kept current from
the run's events alone.

It subscribes to the run's stream (run/stream.py) and keeps its own copy of what the
events carry: each point's rows as they come (PointDone), their finished versions once
derived and passed (GroupDone, GroupComplete), the rows a stop left unmeasured (NotRun)
and the run's env (RunFacts). It never reads the runner, so what it saves is only ever
finished data the views were shown too.

It saves after each group, once every pass has run on it, and after every point (or
every batch of points that finished together on several workers) when the runner is
idle: a `kill -9` of gpubench, which nothing can catch, then costs at most the points in
progress.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpubench.records import completeness as C
from gpubench.records import events as E
from gpubench.records.point import PointKey
from gpubench.records.result import NOT_RUN, Result
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.store.folder import RunFolder


class PlannedPoint(Protocol):
    """What the saver needs of a planned point (run/plan.py's Point)."""

    def key(self, mode: str) -> PointKey: ...

    def result(self, mode: str, status: str, *, error: str | None = None) -> Result: ...


@dataclass
class RunSaver:
    folder: RunFolder
    meta: dict
    points: Sequence[PlannedPoint]  # every planned point, in plan order
    modes: tuple[str, ...]  # the run's timing modes: one row per point and mode
    started: float = field(default_factory=time.perf_counter)
    env: dict = field(default_factory=dict)
    unsaved: bool = False
    # When the first point went to a worker and the last one came back (perf_counter):
    # the run's measuring span; the rest of its wall time is fixed cost (worker starts,
    # the interference reference, saving), which benchmarks/scale_out.py reports.
    first_started: float | None = None
    last_done: float | None = None
    rows: dict[PointKey, Result] = field(default_factory=dict)
    # NOT_RUN rows for points without a result yet, made once per key and reason: a save
    # reuses each row's serialised text by identity (records/saved_rows.py).
    placeholders: dict[tuple, Result] = field(default_factory=dict)
    _order: dict[PointKey, int] = field(default_factory=dict, repr=False)

    def __call__(self, event: E.Event) -> None:
        match event:
            case E.PointStarted() if self.first_started is None:
                self.first_started = time.perf_counter()
            case E.PointDone(rows=rows):
                self.last_done = time.perf_counter()
                self.unsaved = True
                self.take(rows)
            case E.NotRun(rows=rows):
                self.take(rows)
            case E.RunFacts(env=env):
                self.env = env
            case E.Idle() if self.unsaved:
                self.unsaved = False
                self.save()
            case E.GroupDone(group=group):
                self.take(group)
            case E.GroupComplete(group=group):
                self.take(group)
                self.save()

    def take(self, rows: list[Result]) -> None:
        """Newer versions of rows replace older ones (a point key is unique in a run)."""
        for row in rows:
            self.rows[row.key] = row

    def results(self) -> list[Result]:
        """The rows so far in plan order, whatever order the lanes finished in."""
        if len(self._order) != len(self.points) * len(self.modes):
            self._order = {p.key(mode): i for i, p in enumerate(self.points)
                           for mode in self.modes}
        last = len(self._order)
        return sorted(self.rows.values(), key=lambda r: self._order.get(r.key, last))

    def unrun(self, reason: str) -> list[Result]:
        """A NOT_RUN row, with `reason`, for each planned point and mode that has no row."""
        return [self._placeholder(point, mode, reason) for point in self.points
                for mode in self.modes if point.key(mode) not in self.rows]

    def document(self, final: bool = False) -> RunDocument:
        """The run so far. `finished` only in a final document where every planned point
        has a status; any other lists the points still without one as NOT_RUN and is
        marked incomplete (records/completeness.py), so a gpubench killed or ended early
        after this save leaves a folder that says so."""
        unrun = self.unrun(C.NO_STATUS_YET if not final else C.NO_STATUS)
        meta = {**self.meta, "wall_s": time.perf_counter() - self.started}
        if self.first_started is not None and self.last_done is not None:
            meta["points_span_s"] = round(self.last_done - self.first_started, 3)
            meta["startup_s"] = round(self.first_started - self.started, 3)
        results = self.results()
        if unrun:
            meta[C.INCOMPLETE] = C.incomplete_reason(len(unrun), len(results) + len(unrun),
                                                     final)
        elif final:
            meta["finished"] = time.strftime(TIME_FORMAT)
        return RunDocument(meta, self.env, (*results, *unrun))

    def save(self, final: bool = False) -> list[Path]:
        return self.folder.save(self.document(final))

    def _placeholder(self, point: PlannedPoint, mode: str, reason: str) -> Result:
        key = (point.key(mode), reason)
        if key not in self.placeholders:
            self.placeholders[key] = point.result(mode, NOT_RUN, error=reason)
        return self.placeholders[key]

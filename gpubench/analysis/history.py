"""Rows of many runs in, series with their change points out (`gpubench history`). Pure.

A series is one point measured on one GPU model one way (records/series.py), its rows in
run order. Its timed rows are the points the change points are found in; a SUSPECT,
failed or skipped row is a mark on the series, never a value (a wrong answer's time is
no level of the code). Each change point is placed between two runs, so between two
commits: the range `git log A..B` lists what may have caused it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpubench.analysis.change_points import THRESHOLD, ChangePoint, change_points
from gpubench.records.series import HistoryRow

# `--check` calls a change "the newest runs" when its first run is among this many of the
# newest: two segments' worth (change_points.MIN_SEGMENT), the fewest runs after a change
# that can call it, plus as many again for a nightly job that missed a few nights.
RECENT_RUNS = 6


@dataclass(frozen=True)
class SeriesChange:
    """A change point placed in the runs: the last run before it and the first after."""

    change: ChangePoint
    before: HistoryRow
    after: HistoryRow

    @property
    def commits(self) -> str:
        """'1a2b3c4..5d6e7f8': `git log` of this range lists the candidates; one commit
        when both runs measured the same one (then the cause is not in the code)."""
        old, new = self.before.commit_label, self.after.commit_label
        return old if old == new else f"{old}..{new}"

    @property
    def percent(self) -> str:
        """'+4.1% [+3.2%, +5.0%]'."""
        c = self.change
        return f"{c.ratio - 1:+.1%} [{c.low - 1:+.1%}, {c.high - 1:+.1%}]"


@dataclass(frozen=True)
class Series:
    """One point's rows on one GPU model, one method, oldest first, and its changes."""

    key: str
    rows: tuple[HistoryRow, ...]
    changes: tuple[SeriesChange, ...] = field(default=())

    @property
    def first(self) -> HistoryRow:
        return self.rows[0]

    @property
    def timed(self) -> tuple[HistoryRow, ...]:
        return tuple(row for row in self.rows if row.timed)

    @property
    def marks(self) -> tuple[HistoryRow, ...]:
        """The rows that are not points: SUSPECT, failed, skipped, not run."""
        return tuple(row for row in self.rows if not row.timed)

    def change_at(self, row: HistoryRow) -> SeriesChange | None:
        return next((c for c in self.changes if c.after is row), None)

    def worse_lately(self, recent: int = RECENT_RUNS) -> SeriesChange | None:
        """The newest change, when it is a slowdown that began among the `recent` newest
        timed runs (what `--check` fails on)."""
        if not self.changes:
            return None
        last = self.changes[-1]
        timed = self.timed
        position = next(i for i, row in enumerate(timed) if row is last.after)
        return last if last.change.slower and len(timed) - position <= recent else None


def build_series(rows: Sequence[HistoryRow], threshold: float = THRESHOLD) -> list[Series]:
    """The rows grouped into series (in the order their points first appear), each with
    its change points."""
    ordered = sorted(rows, key=_order)
    groups: dict[str, list[HistoryRow]] = {}
    for row in ordered:
        if row.timed:
            groups.setdefault(row.series, []).append(row)
    home: dict[tuple[str, str], str] = {}  # (point, GPU) -> its longest timed series
    for key, members in groups.items():
        where = (members[0].point, members[0].gpu)
        if where not in home or len(members) > len(groups[home[where]]):
            home[where] = key
    for row in ordered:  # a failed row has no method: it marks its point's longest series
        if not row.timed:
            key = home.setdefault((row.point, row.gpu), row.series)
            groups.setdefault(key, []).append(row)
    return [_with_changes(Series(key, tuple(sorted(members, key=_order))), threshold)
            for key, members in groups.items()]


def _order(row: HistoryRow) -> tuple[float, str]:
    return row.started, row.run_dir


# A host-clock series' bar (modes timed by the host's clock): unchanged code stepped by
# -2.0% [-2.4%, -1.3%] and -3.4% [-5.9%, -2.1%] between CPU runs on the 2-core CI machine
# (a host's state, not a commit), where a GPU series' 1% would call a change; 10% keeps a
# doubled or quadrupled workload (+100%, +167% in tests/test_history.py) a change.
HOST_CLOCK_THRESHOLD = {"cpu": 0.10, "wall": 0.10}


def _with_changes(series: Series, threshold: float) -> Series:
    timed = series.timed
    bar = max(threshold, HOST_CLOCK_THRESHOLD.get(series.first.mode, 0.0))
    found = change_points([row.median_s for row in timed], threshold=bar)
    changes = tuple(SeriesChange(c, timed[c.index - 1], timed[c.index]) for c in found)
    return Series(series.key, series.rows, changes)


def regressions(series: Sequence[Series], recent: int = RECENT_RUNS
                ) -> list[tuple[Series, SeriesChange]]:
    """Every series whose newest runs stepped slower (`--check`)."""
    found = []
    for one in series:
        change = one.worse_lately(recent)
        if change is not None:
            found.append((one, change))
    return found

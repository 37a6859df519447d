"""Rows of many runs in, series with their change points out (`gpubench history`). Pure.

A series is one point measured on one GPU model one way (records/series.py), its rows in
run order. Its timed rows are the points the change points are found in; a SUSPECT,
failed or skipped row is a mark on the series, never a value (a wrong answer's time is
no level of the code). Each change point is placed between two runs, so between two
commits: the range `git log A..B` lists what may have caused it, unless the software
changed there too (torch, Triton, CUDA, the driver: records/series.py's ENVIRONMENT): a
step where the environment changed is labelled as the environment's, not blamed on the
commits, and is no regression of the code for `--check`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from gpubench.analysis.change_points import (
    ALPHA,
    FEWEST_RUNS,
    THRESHOLD,
    ChangePoint,
    change_points,
)
from gpubench.records.series import HistoryRow, environment_change, series_key

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
    def environment(self) -> str:
        """'torch 2.12.0 -> 2.13.0' where the software changed across the step, else ''."""
        return environment_change(self.before, self.after)

    @property
    def cause(self) -> str:
        """What the step is put down to: 'environment changed: torch 2.12.0 -> 2.13.0',
        else 'commits 1a2b3c4..5d6e7f8'."""
        if self.environment:
            return f"environment changed: {self.environment}"
        return f"commits {self.commits}"

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
    folder: str = ""  # the family folder's identity (records/series.folder_identity)
    show_folder: bool = False  # its family name has other folders: titles name this one

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

    def environment_at(self, row: HistoryRow) -> str:
        """'torch 2.12.0 -> 2.13.0' where the row's run had other software than the run
        before it in the series, else ''."""
        place = next(i for i, one in enumerate(self.rows) if one is row)
        return environment_change(self.rows[place - 1], row) if place else ""

    def worse_lately(self, recent: int = RECENT_RUNS) -> SeriesChange | None:
        """The newest change, when it is a slowdown of the code that began among the
        `recent` newest timed runs (what `--check` fails on): not one where the software
        changed (environment_lately)."""
        last = self._slower_lately(recent)
        return last if last is not None and not last.environment else None

    def environment_lately(self, recent: int = RECENT_RUNS) -> SeriesChange | None:
        """The newest change, when it is a slowdown among the `recent` newest timed runs
        where the software changed: `--check` says so and does not fail on it."""
        last = self._slower_lately(recent)
        return last if last is not None and last.environment else None

    def _slower_lately(self, recent: int) -> SeriesChange | None:
        if not self.changes:
            return None
        last = self.changes[-1]
        timed = self.timed
        position = next(i for i, row in enumerate(timed) if row is last.after)
        return last if last.change.slower and len(timed) - position <= recent else None


def build_series(rows: Sequence[HistoryRow], threshold: float = THRESHOLD) -> list[Series]:
    """The rows grouped into series (in the order their points first appear), each with
    its change points. A row of an unknown folder (a run older than folder identities)
    joins its point's folder where the point's rows know only one."""
    ordered = sorted(rows, key=_order)
    folder_of = _folders(ordered)
    groups: dict[str, list[HistoryRow]] = {}
    for row in ordered:
        if row.timed:
            groups.setdefault(series_key(row, folder_of(row)), []).append(row)
    home: dict[tuple[str, str, str], str] = {}  # (point, GPU, folder) -> longest series
    for key, members in groups.items():
        where = (members[0].point, members[0].gpu, folder_of(members[0]))
        if where not in home or len(members) > len(groups[home[where]]):
            home[where] = key
    for row in ordered:  # a failed row has no method: it marks its point's longest series
        if not row.timed:
            key = home.setdefault((row.point, row.gpu, folder_of(row)),
                                  series_key(row, folder_of(row)))
            groups.setdefault(key, []).append(row)
    return [_with_changes(Series(key, tuple(sorted(members, key=_order)),
                                 folder=folder_of(members[0])), threshold)
            for key, members in groups.items()]


def _folders(rows: Sequence[HistoryRow]) -> Callable[[HistoryRow], str]:
    """row -> the folder its series is keyed by: its own, or for an unknown one ('') the
    one folder its point's other rows name (a store of runs from before and after folder
    identities keeps one series per folder, not a seam at the upgrade)."""
    known: dict[str, set[str]] = {}
    for row in rows:
        if row.folder:
            known.setdefault(row.point, set()).add(row.folder)

    def folder_of(row: HistoryRow) -> str:
        if row.folder:
            return row.folder
        only = known.get(row.point, set())
        return next(iter(only)) if len(only) == 1 else ""

    return folder_of


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
    return replace(series, changes=changes)


def regressions(series: Sequence[Series], recent: int = RECENT_RUNS
                ) -> list[tuple[Series, SeriesChange]]:
    """Every series whose newest runs stepped slower (`--check`)."""
    found = []
    for one in series:
        change = one.worse_lately(recent)
        if change is not None:
            found.append((one, change))
    return found


def can_step(one: Series) -> bool:
    """Whether the series has the runs a change point needs (change_points.FEWEST_RUNS):
    a series `--check` tests, and counts in its correction across series."""
    return len(one.timed) >= FEWEST_RUNS


def holm(worse: Sequence[tuple[Series, SeriesChange]], tested: int, alpha: float = ALPHA
         ) -> tuple[list[tuple[Series, SeriesChange]], list[tuple[Series, SeriesChange, float]]]:
    """(failed on, held with the bar each missed): `--check`'s slowdowns through Holm's
    step-down over the `tested` series, so that the chance of any false alarm over the
    whole suite stays under `alpha` however many series a nightly job checks.

    Each series already passed its own rank test at `alpha`; with 200 series that alone
    lets ~10 unchanged series through a year of nights (TypeScript's 9 of 166). Holm
    rather than Bonferroni: the decisions are made once, on final p-values, where its
    step-down is never less powerful; rather than Benjamini-Hochberg: one false alarm
    fails a nightly job, so the family-wise rate is the one that matters. The cost is
    runs: the rank test's smallest p after 3 runs beside 5 is 2/C(8,3) = 0.036, so over
    two series (bar 0.025) a step needs a fourth run after it (2/C(9,4) = 0.016) before
    it fails the job; `--confirm` A/Bs a held step at once instead."""
    ordered = sorted(worse, key=lambda w: w[1].change.p_value)
    failed: list[tuple[Series, SeriesChange]] = []
    held: list[tuple[Series, SeriesChange, float]] = []
    for rank, (one, change) in enumerate(ordered):
        bar = alpha / max(tested - rank, 1)
        if not held and change.change.p_value < bar:
            failed.append((one, change))
        else:  # step-down: once one is held, every larger p-value is held too
            held.append((one, change, bar))
    return failed, held

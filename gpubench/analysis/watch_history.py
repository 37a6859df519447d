"""A `run --watch` session's iterations, and each new point against its earlier times.

Every iteration is a run of its own (one process, one run record). A point of the newest
iteration is compared with two earlier iterations: the last one in which it passed (the
edit before this one, or the last good one when edits in between broke it) and the first
one in which it passed (where the session started). Each comparison is exactly what
`gpubench compare iter-K iter-N` says for that point: compare_runs on the two whole run
documents, so the group's common shift and the environment checks are the same ones.

Pure: run documents in, comparisons out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench.analysis.comparison import DEFAULT_THRESHOLD, PointComparison, compare_runs
from gpubench.records.result import NOT_RUN, Result
from gpubench.records.run import RunDocument


@dataclass(frozen=True)
class Earlier:
    """One point against one earlier iteration (numbered from 1)."""

    iteration: int
    point: PointComparison


@dataclass(frozen=True)
class PointReport:
    """A point of the newest iteration and what it is against earlier ones: `previous`,
    the last iteration where it passed; `first`, the first such, None when that is the
    same iteration as `previous` (or when it never passed before)."""

    result: Result
    previous: Earlier | None = None
    first: Earlier | None = None


@dataclass
class WatchHistory:
    threshold: float = DEFAULT_THRESHOLD
    runs: list[RunDocument] = field(default_factory=list)
    first_good: dict[str, int] = field(default_factory=dict)  # point key -> iteration
    last_good: dict[str, int] = field(default_factory=dict)

    def add(self, run: RunDocument) -> list[PointReport]:
        """Record the newest iteration; its points against the earlier ones, in run order."""
        self.runs.append(run)
        number = len(self.runs)
        compared: dict[int, dict[str, PointComparison]] = {}
        reports = [self._report(result, compared) for result in run.results]
        for result in run.results:
            if result.passed:
                key = result.key.text()
                self.first_good.setdefault(key, number)
                self.last_good[key] = number
        return reports

    def _report(self, result: Result, compared: dict) -> PointReport:
        key = result.key.text()
        before_last, before_first = self.last_good.get(key), self.first_good.get(key)
        if before_last is None:
            return PointReport(result)
        previous = Earlier(before_last, self._against(before_last, compared)[key])
        first = (Earlier(before_first, self._against(before_first, compared)[key])
                 if before_first != before_last else None)
        return PointReport(result, previous, first)

    def _against(self, iteration: int, compared: dict) -> dict[str, PointComparison]:
        """The newest run compared with iteration `iteration`, once per iteration."""
        if iteration not in compared:
            result = compare_runs(self.runs[iteration - 1], self.runs[-1], self.threshold)
            compared[iteration] = result.by_key()
        return compared[iteration]

    def latest(self) -> list[Result]:
        """Every point's newest result, whichever iteration measured it last: the state
        the session ends in (the exit code is this state's, as `run`'s is its results')."""
        newest: dict[str, Result] = {}
        for run in self.runs:
            for result in run.results:
                if result.status != NOT_RUN or result.key.text() not in newest:
                    newest[result.key.text()] = result
        return list(newest.values())

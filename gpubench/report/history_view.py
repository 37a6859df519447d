"""`gpubench history` as text: per series its runs (median, CI, commit) with the change
points marked (and the runs where the software changed), and a markdown summary for a pull
request or a nightly job. Pure: lines of text; the user's names (variants, commit
subjects) go through safe_text."""

from __future__ import annotations

import time
from collections.abc import Sequence

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.analysis.change_points import FEWEST_RUNS, RULE
from gpubench.analysis.history import Series, SeriesChange
from gpubench.records import result as R
from gpubench.records.series import HistoryRow, folder_label


def series_title(series: Series) -> str:
    """'square cuda float32 n=1048576 cold, NVIDIA H200'; 'square [repo-a:kernels/square]
    cuda ...' where the family name has several folders (Series.show_folder)."""
    row = series.first
    return (f"{_family(series)} {row.variant} {row.dtype} {row.shape} {row.mode}, "
            f"{row.gpu or 'unknown device'}")


def series_folder(series: Series) -> str:
    """The series' family folder, compactly ('repo-a:kernels/square'; '?' unknown)."""
    return folder_label(series.folder)


def _family(series: Series) -> str:
    name = series.first.family
    return f"{name} [{series_folder(series)}]" if series.show_folder else name


def series_lines(series: Series, last: int | None) -> list[str]:
    """The series' newest `last` runs (None: all), one line each, oldest first."""
    rows = series.rows if last is None else series.rows[-last:]
    skipped = len(series.rows) - len(rows)
    lines = [safe_text.terminal(series_title(series))]
    if skipped:
        lines.append(f"  ... {skipped} older runs (--last to show more)")
    lines += ["  " + _run_line(series, row) for row in rows]
    if not series.changes:
        enough = len(series.timed)
        lines.append(f"  no change point in {enough} timed runs" if enough >= FEWEST_RUNS
                     else f"  {enough} timed runs: {RULE}")
    return lines


def _run_line(series: Series, row: HistoryRow) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.started)) if row.started else "?"
    head = f"{when}  {row.commit_label:<13} "
    if not row.timed:
        env = series.environment_at(row)
        return safe_text.terminal(f"{head}{'':>10}  {'':>21}  mark: {mark_text(row)}"
                                  + (f"  env: {env}" if env else ""))
    ci = f"[{fmt.duration(row.ci_low_s)}, {fmt.duration(row.ci_high_s)}]"
    line = f"{head}{fmt.duration(row.median_s):>10}  {ci:>21}"
    change = series.change_at(row)
    if change is not None:
        line += f"  <- change {change_text(change)}"
    elif series.environment_at(row):  # a change point's text names it already
        line += f"  env: {series.environment_at(row)}"
    return safe_text.terminal(line)


def mark_text(row: HistoryRow) -> str:
    """Why a row is no point of its series: 'SUSPECT', 'FAIL', 'checked, not timed' (a
    Triton kernel in the interpreter passes without a time)."""
    return "checked, not timed" if row.status == R.OK else R.status_label(row.status)


def change_text(change: SeriesChange) -> str:
    """'+4.1% [+3.2%, +5.0%] (p=0.004), commits 1a2b3c4..5d6e7f8', or '..., environment
    changed: torch 2.12.0 -> 2.13.0' where the software changed at the step."""
    return f"{change.percent} (p={change.change.p_value:.2g}), {change.cause}"


def change_commits(change: SeriesChange) -> str:
    """A table's commits cell: the range, or the environment change that explains it."""
    return change.cause if change.environment else change.commits


class Totals:
    """summary_line's counts, a series at a time: `history` streams its series and keeps
    only these (and the series an output needs), not every series' rows."""

    def __init__(self) -> None:
        self.series = self.changes = self.slower = 0
        self.runs: set[str] = set()

    def add(self, one: Series) -> None:
        self.series += 1
        self.changes += len(one.changes)
        self.slower += sum(c.change.slower for c in one.changes)
        self.runs.update(row.run_dir for row in one.rows)

    def line(self, worse: int) -> str:
        text = (f"{self.series} series over {len(self.runs)} runs: {self.changes} change "
                f"points ({self.slower} slower, {self.changes - self.slower} faster)")
        if worse:
            text += f"; {worse} slower in the newest runs"
        return text


def summary_line(series: Sequence[Series], worse: Sequence[tuple[Series, SeriesChange]]
                 ) -> str:
    totals = Totals()
    for one in series:
        totals.add(one)
    return totals.line(len(worse))


def markdown(series: Sequence[Series], worse: Sequence[tuple[Series, SeriesChange]],
             summary: str | None = None) -> str:
    """A summary for a pull request: the change points, newest first, the regressions
    among the newest runs called out. `series`: those with changes at least; `summary`:
    the summary line of all of them, where `series` is not all."""
    lines = ["## gpubench history", "", summary or summary_line(series, worse), ""]
    changes = sorted(((s, c) for s in series for c in s.changes),
                     key=lambda item: item[1].after.started, reverse=True)
    if not changes:
        return "\n".join([*lines, "No change point found."]) + "\n"
    lines += ["| point | GPU | from run | commits | change [95% CI] | p | newest |",
              "|---|---|---|---|---|---|---|"]
    newest = {id(c) for _, c in worse}
    for one, change in changes:
        row = change.after
        cells = [f"{_family(one)} {row.variant} {row.dtype} {row.shape} {row.mode}", row.gpu,
                 row.run_id, change_commits(change), change.percent,
                 f"{change.change.p_value:.2g}", "**slower**" if id(change) in newest else ""]
        lines.append("| " + " | ".join(safe_text.markdown(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"

"""What the user sees while a run goes: a progress bar, then a table per group.

Connects the runner's callbacks to a rich console. With --json the tables go
to stderr (stdout is reserved for the JSON document) and the bar is hidden.
"""

from __future__ import annotations

from collections import defaultdict

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from gpubench.plan import Point
from gpubench.records import result as R
from gpubench.report.table import group_notes, group_table
from gpubench.runner import RunCallbacks


class RunDisplay:
    def __init__(self, console: Console, total: int, on_group=None, show_progress: bool = True,
                 against=None, before_show=None):
        self.console = console
        # against(group) -> {point key text: Comparison} with the --baseline run, or None.
        self.against = against
        self.on_group = on_group or (lambda group: None)
        # before_show(group) -> group: work that adds to a finished group before its table
        # (--ncu-check's column); on_group runs after the table.
        self.before_show = before_show or (lambda group: group)
        self.device_name = ""
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True, disable=not show_progress,
        )
        self.task_id = self.progress.add_task("starting", total=total)

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        self.progress.stop()

    def callbacks(self) -> RunCallbacks:
        return RunCallbacks(
            point_started=self._started,
            phase=self._phase,
            point_done=lambda rows: self.progress.advance(self.task_id),
            group_done=self._group_done,
            worker_started=self._worker_started,
        )

    def _worker_started(self, env: dict) -> None:
        self.device_name = env.get("gpu") or "CPU"

    def _started(self, point: Point) -> None:
        self._describe(point, "skipped" if point.skip else "starting")

    def _phase(self, point: Point, phase: str) -> None:
        self._describe(point, phase)

    def _describe(self, point: Point, phase: str) -> None:
        self.progress.update(self.task_id, description=(
            f"{point.family.name} {point.variant.name} {point.shape.label()} {point.dtype}: "
            f"{phase}"))

    def _group_done(self, group: list[R.Result]) -> None:
        group = self.before_show(group)
        against = self.against(group) if self.against else None
        self.console.print(group_table(group, self.device_name, against))
        for note in group_notes(group):
            self.console.print(f"  {note}", soft_wrap=True, markup=False)
        self.on_group(group)


def skipped_summary(results: list[R.Result]) -> list[str]:
    """'3 points skipped: needs a CUDA GPU (cuda/square x2, ...)' — one line per reason."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    first_mode = results[0].mode if results else ""
    for result in results:
        if result.status == R.SKIPPED and result.mode == first_mode:
            by_reason[result.error or "?"].append(f"{result.family}/{result.variant}")
    lines = []
    for reason, names in by_reason.items():
        unique = sorted(set(names))
        lines.append(f"skipped {len(names)} point(s) of {', '.join(unique)}: {reason}")
    return lines


def failure_summary(results: list[R.Result]) -> list[str]:
    """One line per failed point, with its full error message."""
    lines = []
    for r in results:
        line = f"{r.status.upper()} {r.family}/{r.variant} {r.shape.label()} {r.dtype}: {r.error}"
        if r.status in R.FAILED_STATUSES and line not in lines:
            lines.append(line)
    return lines

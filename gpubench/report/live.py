"""What the user sees while a run goes: a progress bar, then a table per group.

Listens to the run's events (records/events.py) and shows them on a rich
console; it only shows, never acts on results. With --json the tables go
to stderr (stdout is reserved for the JSON document) and the bar is hidden.
When the console is not a terminal (a CI log, `| tee`), a bar cannot redraw: a
line per finished point takes its place, and a phase that runs longer than a few
seconds (a build, Triton's first compile, a slow check) says when it starts and
ends, so a log never goes silent for the 40 s of a build; a long build also says what it
does (run/build_progress.py), on the bar's line or, piped, in a line every 20 s.
"""

from __future__ import annotations

import textwrap
import threading
import time
from collections import defaultdict

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from gpubench import safe_text
from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.records.features.error_site import ERROR_SITE
from gpubench.report.legend import INTERPRETED
from gpubench.report.run_tables import RunTables
from gpubench.report.table import group_notes, source_below

# Where the full text of a message cut for the terminal is (safe_text.terminal).
FULL_TEXT = "results.json"


class RunDisplay:
    """The progress bar (or its lines), a table per finished group and, once the run
    ends, the tables' one legend: subscribe it to the runner (`runner.subscribe(display)`)
    and enter it for the run's duration. `tables`: False leaves the tables out (`run
    --watch` says one line per point); `legend`: False leaves the legend out (--no-legend);
    `variants`: the planned variants' names as rows show them, so the first table leaves
    room for the longest (report/run_tables.py)."""

    def __init__(self, console: Console, total: int, show_progress: bool = True,
                 tables: bool = True, legend: bool = True, variants: tuple[str, ...] = ()):
        self.console = console
        self.tables = tables
        self.legend = legend
        self.run_tables = RunTables(console.width, variants)
        self.device_name = ""
        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=True, disable=not show_progress,
        )
        self.task_id = self.progress.add_task("starting", total=total)
        self.lines = PlainProgress(console, total) if show_progress and \
            not console.is_terminal else None

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc):
        # The legend first: stopping the bar ends the display with a blank line of its own
        # (piped), which then parts the legend from the epilogue. Ctrl-C too: the tables
        # shown need their legend.
        if self.legend and self.run_tables.shown:
            self.console.print()
            self.console.print(Text(safe_text.terminal(self.run_tables.legend_text(),
                                                       limit=None), style="table.caption"))
        self.progress.stop()
        if self.lines is not None:
            self.lines.close()

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.PointStarted):
            self._describe(event.point, "skipped" if event.point.skipped else "starting")
        elif isinstance(event, E.Phase) and event.detail:  # still in it: a build's progress
            self._describe(event.point, f"{event.phase}, {event.detail}")
            if self.lines is not None:
                self.lines.detail(event.point.label(), event.detail, event.phase)
        elif isinstance(event, E.Phase):
            self._describe(event.point, event.phase)
            if self.lines is not None:
                self.lines.phase(event.point.label(), event.phase)
        elif isinstance(event, E.PointDone):
            self.progress.advance(self.task_id)
            if self.lines is not None:
                self.lines.point_done(event.rows)
        elif isinstance(event, E.GroupDone) and self.tables:
            self._show_group(event.group)
        elif isinstance(event, E.WorkerStarted):
            self.device_name = event.env.get("gpu") or "CPU"

    def _describe(self, point: E.PointRef, phase: str) -> None:
        # the description is read as rich markup: the family's name is escaped
        self.progress.update(self.task_id, description=escape(safe_text.one_line(
            f"{point.family} {point.variant} {point.shape} {point.dtype}: {phase}")))

    def _show_group(self, group: list[R.Result]) -> None:
        self.console.print(self.run_tables.table(group, self.device_name))
        for note in group_notes(group):
            self.console.print(hanging(safe_text.terminal(note, where=FULL_TEXT),
                                       self.console.width), soft_wrap=True, markup=False)


class RunNotes:
    """What the run has to say besides its tables, on the console: the passes' messages,
    the interference reference's verdict (several lanes) and stale cached ceilings
    (`ceilings`: False leaves that out, for `run --watch`'s later iterations: once a
    session is enough)."""

    def __init__(self, console: Console, ceilings: bool = True):
        self.console = console
        self.ceilings = ceilings

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.Message):
            self.console.print(safe_text.terminal(event.text), markup=False,
                               soft_wrap=event.soft_wrap)
        elif isinstance(event, E.Interference):
            self.console.print(hanging(safe_text.terminal(event.summary), self.console.width,
                                       indent="", hang="  "), markup=False, soft_wrap=True)
            if event.warning:
                self._warn(event.warning)
        elif isinstance(event, E.WorkerStarted) and self.ceilings:
            # Once, before the first table: the cached ceilings disagree with this run's
            # copy probe (timing/ceilings.py), so its "of roof" figures are off by that much.
            check = event.env.get("ceilings_check") or {}
            if check.get("stale"):
                self._warn(check.get("message", ""))

    def _warn(self, text: str) -> None:
        line = Text(hanging(f"warning: {safe_text.terminal(text)}", self.console.width,
                            indent="", hang="  "))
        line.stylize("yellow", 0, len("warning:"))
        self.console.print(line, soft_wrap=True)


def hanging(text: str, width: int, indent: str = "  ", hang: str = "    ") -> str:
    """`text` folded at spaces to `width` columns, its first line after `indent` and the
    others after `hang`, so that a note of 219 characters reads as a paragraph under the
    name it starts with, not as a line the terminal breaks mid-word. What follows a newline
    (the source line under an error) is kept as it is: code is not re-flowed. A word longer
    than a line (a path) stays whole, to be copied."""
    first, *rest = text.split("\n")
    lines = textwrap.wrap(first, width=max(width, 40), initial_indent=indent,
                          subsequent_indent=hang, break_long_words=False,
                          break_on_hyphens=False)
    return "\n".join([*(lines or [indent]), *rest])


class PlainProgress:
    """Progress as lines, for a console that is not a terminal. A phase is announced only
    once it has run QUIET_S (so the many sub-second phases of a run print nothing), and
    then its end is said too, with its duration."""

    # A log line every 40 s of build is what a silent CI log lacked; 3 s keeps the lines
    # to the phases a person would wonder about (builds take 6-40 s, checks 0.1-2 s).
    QUIET_S = 3.0
    # An announced phase's progress (a build's: build_progress.py) at most this often.
    DETAIL_EVERY_S = 20.0

    def __init__(self, console: Console, total: int, clock=time.monotonic):
        self.console, self.total, self.clock = console, total, clock
        self.done = 0
        self.current: tuple[str, str, float] | None = None  # label, phase, start
        self.announced = False
        self.detail_said = 0.0  # when the current phase's progress was last said
        self.timer: threading.Timer | None = None
        self.lock = threading.Lock()

    def phase(self, label: str, phase: str) -> None:
        with self.lock:
            self._end_phase()
            self._follow(label, phase)

    def _follow(self, label: str, phase: str) -> None:
        """`phase` of `label` is the current one from now; announced after QUIET_S."""
        self.current, self.announced = (label, phase, self.clock()), False
        self.timer = threading.Timer(self.QUIET_S, self.announce)
        self.timer.daemon = True
        self.timer.start()

    def announce(self) -> None:
        """The current phase has run QUIET_S: say so (called by the timer, or a test)."""
        with self.lock:
            if self.current is not None and not self.announced:
                label, phase, _ = self.current
                self.announced, self.detail_said = True, self.clock()
                self._say(f"{label}: {phase} ...")

    def detail(self, label: str, detail: str, phase: str = "build") -> None:
        """The current phase's progress, said once it is announced and at most every
        DETAIL_EVERY_S: "sq/cpp n=2^20 float32: build ... 62 s: ninja [2/3]: ...". The
        build phase's builders compile for points no lane holds: where no phase is
        current (the lanes wait for them), the first such detail becomes the phase
        followed, announced after QUIET_S as any other."""
        with self.lock:
            if self.current is None:
                self._follow(label, phase)
            if self.current[0] != label or not self.announced:
                return
            if self.clock() - self.detail_said >= self.DETAIL_EVERY_S:
                self.detail_said = self.clock()
                self._say(f"{label}: {self.current[1]} ... {detail}")

    def point_done(self, rows: list[R.Result]) -> None:
        with self.lock:
            self._end_phase(_outcome(rows))
            self.current = None
            self.done += 1
            if rows:
                self._say(f"[{self.done}/{self.total}] {point_line(rows)}")

    def close(self) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()

    def _end_phase(self, outcome: str | None = None) -> None:
        """Says how the announced phase ended: "done" when the point went on or passed,
        else the point's status (a phase that timed out is not "done")."""
        if self.timer is not None:
            self.timer.cancel()
        if self.current is not None and self.announced:
            label, phase, start = self.current
            ended = f"ended in {outcome} after" if outcome else "done in"
            self._say(f"{label}: {phase} {ended} {self.clock() - start:.1f} s")

    def _say(self, text: str) -> None:
        self.console.print(safe_text.one_line(text, safe_text.TERMINAL_LIMIT), markup=False,
                           highlight=False, soft_wrap=True)


def _outcome(rows: list[R.Result]) -> str | None:
    """The status that ended a point which did not pass (TIMEOUT, CRASHED ...), or None."""
    failed = [row.status for row in rows if row.status not in (R.OK, R.SKIPPED)]
    return R.status_label(failed[0]) if failed else None


def point_line(rows: list[R.Result]) -> str:
    """'square/cuda n=2^20 float32: cold 4.71 us ±0.3%, warm 4.40 us ±0.2%' or the status."""
    from gpubench import format as fmt

    first = rows[0]
    head = f"{first.family}/{first.variant} {first.shape.label()} {first.dtype}:"
    parts = []
    for row in rows:
        summary = row.summary if row.passed else None
        if row.passed and R.correctness_only(row):
            parts.append(f"{row.mode} {R.status_label(row.status)}, {INTERPRETED} "
                         "(correctness only)")
        elif summary is None:
            parts.append(f"{row.mode} {R.status_label(row.status)}")
        else:
            median = fmt.duration(summary.median, min(summary.significant_digits, 4))
            parts.append(f"{row.mode} {median} ±{fmt.percent(summary.rel_ci)}")
    return f"{head} {', '.join(parts)}"


def skipped_summary(results: list[R.Result]) -> list[str]:
    """'3 points skipped: needs a CUDA GPU (cuda/square x2, ...)' — one line per reason."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    first_mode = results[0].mode if results else ""
    for result in results:
        if result.status == R.SKIPPED and result.mode == first_mode:
            by_reason[result.error or "?"].append(
                f"{safe_text.one_line(result.family)}/{result.variant}")
    lines = []
    for reason, names in by_reason.items():
        unique = sorted(set(names))
        lines.append(f"skipped {len(names)} point(s) of {', '.join(unique)}: {reason}")
    return lines


def failure_summary(results: list[R.Result]) -> list[str]:
    """One line per failed or SUSPECT point, with its full error message or reason (a
    SUSPECT row's output was right, its time is not to be trusted: the run exits
    errors.EXIT_SUSPECT for it, and the reader must see why)."""
    lines = []
    for r in results:
        line = (f"{R.status_label(r.status)} {safe_text.one_line(r.family)}/{r.variant} "
                f"{r.shape.label()} {r.dtype}: {r.error}{source_below(r)}")
        if (r.status in R.FAILED_STATUSES or r.status == R.SUSPECT) and line not in lines:
            lines.append(line)
    return lines


def failure_logs(results: list[R.Result]) -> list[str]:
    """`--verbose`: the whole traceback or compiler log of each failed point that has one
    (records/features/error_site.py), once per text, under a line naming the point."""
    lines, seen = [], set()
    for r in results:
        log = (r.extra(ERROR_SITE.name) or {}).get("log")
        if r.status in R.FAILED_STATUSES and log and log not in seen:
            seen.add(log)
            lines.append(f"--- {R.status_label(r.status)} {safe_text.one_line(r.family)}/"
                         f"{r.variant} {r.shape.label()} {r.dtype}:\n{log.rstrip()}")
    return lines

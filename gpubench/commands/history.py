"""`gpubench history`: every recorded run as points of series, their change points, and a
check for a nightly job.

The store (store/history_store.py) is brought up to date from the run folders
first, then read a point at a time (issue 61: a store of 10^6 rows is never in memory
whole; `history FAMILY` reads that family's points through the store's index): the rows
chosen (family, variants, shapes, since) are grouped into series and searched for change
points (analysis/history.py); the view prints them as they come, with a transient
progress bar on stderr where that is a terminal, and --markdown, --html, --export write
them. --check exits 13 when a series' newest runs stepped slower, unless the software
changed at the step (torch, Triton, CUDA, the driver): that one is said, not failed on.
"""

from __future__ import annotations

import calendar
import contextlib
import importlib.util
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from gpubench import errors, safe_text
from gpubench.analysis.change_points import ALPHA, THRESHOLD
from gpubench.analysis.history import (
    RECENT_RUNS,
    Series,
    SeriesChange,
    build_series,
    can_step,
    holm,
)
from gpubench.files import write_output
from gpubench.parsing import parse_size
from gpubench.records.run import NewerSchema
from gpubench.records.series import HistoryRow
from gpubench.report.history_page import render_history
from gpubench.report.history_view import Totals, markdown, series_folder, series_lines
from gpubench.store import history_store

EXPORTS = (".csv", ".parquet")


@dataclass(frozen=True)
class HistoryRequest:
    """What `gpubench history` was asked for, built once by the CLI."""

    family: str | None = None
    variants: tuple[str, ...] = ()
    shapes: tuple[str, ...] = ()
    since: str | None = None  # 'YYYY-MM-DD' or '14d'
    last: int | None = 20  # runs shown per series (all are searched)
    check: bool = False
    confirm: bool = False  # --check --confirm: each flagged step A/B'd (commands/confirm.py)
    markdown: Path | None = None  # '-': stdout
    html: Path | None = None
    export: Path | None = None
    rebuild: bool = False
    threshold: float = THRESHOLD
    recent: int = RECENT_RUNS
    backfill: str | None = None  # A..B: run each commit that changed FAMILY first (backfill.py)
    kernels_dirs: tuple[Path, ...] = ()  # where FAMILY is, for --backfill


def execute(request: HistoryRequest, console: Console) -> int:
    _require_libraries()
    since = _since(request.since)
    if request.export is not None and request.export.suffix not in EXPORTS:
        raise errors.UsageError(f"--export writes {' or '.join(EXPORTS)}, not "
                                f"'{safe_text.one_line(request.export.name)}'")
    if request.confirm and not request.check:
        raise errors.UsageError("--confirm A/Bs the steps --check flags: add --check")
    if request.backfill is not None:
        from gpubench.commands.backfill import backfill  # runs: the run command's imports
        from gpubench.run.config import RunConfig

        if not request.family:
            raise errors.UsageError("--backfill runs one family's commits: name the family")
        backfill(request.family, request.backfill, RunConfig(
            kernels_dirs=request.kernels_dirs), console)
    seen = _Seen(request)
    _stream(request, since, console, seen)
    if request.export is not None:
        _export(sorted(seen.exported, key=lambda row: (row.started, row.run_dir)),
                request.export)
        console.print(f"exported {len(seen.exported)} rows: "
                      f"{safe_text.short_path(request.export)}", markup=False)
    if not seen.totals.series:
        console.print("no recorded run matches: `gpubench runs` lists what is recorded",
                      markup=False)
    else:
        console.print(seen.totals.line(len(seen.worse)), markup=False)
    _write_outputs(request, seen, console)
    if request.check:
        for one, change in seen.environment:
            console.print(safe_text.terminal(
                f"slower in the newest runs, not failed on (the software changed): "
                f"{_where(one)}: {change.percent}, {change.cause}"), markup=False)
        return _check(request, seen, console)
    return errors.EXIT_OK


def _check(request: HistoryRequest, seen: _Seen, console: Console) -> int:
    """--check: exit 13 for a slowdown that passes Holm's correction over the series
    tested (analysis/history.holm), or with --confirm for one its A/B confirms (a held
    one too: the A/B decides it now instead of more nights) or could not measure (the
    flag stands)."""
    failed, held = holm(seen.worse, seen.tested)
    confirmed = stands = 0
    steps = [(one, change, "") for one, change in failed] + [
        (one, change, f"held (p = {change.change.p_value:.3f}; over {seen.tested} series "
                      f"Holm needs < {bar:.4f}: more runs after the step, or --confirm)")
        for one, change, bar in held]
    for one, change, why in steps:
        console.print(safe_text.terminal(
            f"slower in the newest runs{', ' + why if why else ''}: {_where(one)}: "
            f"{change.percent}, {change.cause}"), markup=False, soft_wrap=True)
        if request.confirm:
            found = _confirm(one, change)
            confirmed += found.confirmed
            stands += found.stands and not why  # a held step stays held
            console.print(safe_text.terminal(f"  {found.said}"), markup=False)
    if seen.worse:
        console.print(f"--check: false alarms held under {ALPHA:.0%} over {seen.tested} "
                      f"series (Holm)", markup=False)
    if confirmed or stands or (failed and not request.confirm):
        return errors.EXIT_REGRESSION
    return errors.EXIT_OK


def _confirm(one: Series, change):
    """The step's A/B (commands/confirm.py), its run folders in a scratch folder."""
    import tempfile

    from gpubench.commands.confirm import confirm_step

    with tempfile.TemporaryDirectory(prefix="gpubench-confirm-") as scratch:
        return confirm_step(one, change, Path(scratch))


def _where(one: Series) -> str:
    """'pair/work/float32/n=65536/cpu on x86_64', with the folder where its family name
    has several."""
    folder = f" [{series_folder(one)}]" if one.show_folder else ""
    return f"{one.first.point}{folder} on {one.first.gpu}"


class _Seen:
    """What the streamed series leave behind (issue 61: a store of 10^6 rows is read a
    point at a time): the summary's counts, the regressions, the series an output needs
    (--html: every one; --markdown: those with changes), the rows --export writes."""

    def __init__(self, request: HistoryRequest) -> None:
        self.request = request
        self.totals = Totals()
        self.worse: list[tuple[Series, SeriesChange]] = []
        # slowdowns among the newest runs where the software changed: said, not failed on
        self.environment: list[tuple[Series, SeriesChange]] = []
        self.kept: list[Series] = []
        self.exported: list[HistoryRow] = []
        self.tested = 0  # series with the runs a change point needs: Holm's count

    def add(self, one: Series) -> None:
        self.totals.add(one)
        self.tested += can_step(one)
        change = one.worse_lately(self.request.recent)
        if change is not None:
            self.worse.append((one, change))
        changed = one.environment_lately(self.request.recent)
        if changed is not None:
            self.environment.append((one, changed))
        if self.request.html is not None or (self.request.markdown is not None
                                             and one.changes):
            self.kept.append(one)


def _stream(request: HistoryRequest, since: float | None, console: Console,
            seen: _Seen) -> None:
    """Each chosen point's rows, read from the store one point at a time (in the order
    the points' first runs began), grouped into series, searched and printed."""
    db = _opened(request.rebuild, console)
    try:
        points = [p for p in history_store.points(db, request.family) if _chosen(p, request)]
        many = history_store.families_of_many_folders(db, request.family)
        with _progress(len(points)) as advance:
            for point in points:
                rows = [row for row in history_store.point_rows(db, point)
                        if since is None or row.started >= since]
                if request.export is not None:
                    seen.exported.extend(rows)
                for one in build_series(rows, request.threshold):
                    if one.first.family in many:
                        one = replace(one, show_folder=True)
                    for line in series_lines(one, request.last):
                        console.print(line, markup=False, highlight=False, soft_wrap=True)
                    console.print()
                    seen.add(one)
                advance()
    except sqlite3.Error as exc:
        raise errors.OutputError(f"the history store {_store()} cannot be read "
                                 f"({safe_text.one_line(exc)}); "
                                 f"{_remedy(exc, request.rebuild)}") from None
    finally:
        db.close()


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[], None]]:
    """A bar on stderr while the points are read, only where stderr is a terminal (a log
    or a pipe gets none) and it is transient: nothing of it stays. Where stdout is the
    terminal too, its lines are printed above the bar; where stdout goes to a file, they
    go there untouched."""
    err = Console(stderr=True)
    if not err.is_terminal or total < 2:
        yield lambda: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(TextColumn("history: points"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True,
                  redirect_stdout=sys.stdout.isatty(), redirect_stderr=False) as bar:
        task = bar.add_task("points", total=total)
        yield lambda: bar.advance(task)


def _require_libraries() -> None:
    """ruptures and scipy are gpubench's dependencies; an install without them (`pip
    install --no-deps`, a GPU image) gets one line, not an ImportError."""
    missing = [name for name in ("ruptures", "scipy") if importlib.util.find_spec(name) is None]
    if missing:
        raise errors.EnvironmentProblem(f"gpubench history needs {' and '.join(missing)} "
                                        f"(pip install {' '.join(missing)})")


def _opened(rebuild: bool, console: Console) -> sqlite3.Connection:
    """The store, synced from the run folders first where it can be written; one line
    says when it cannot (busy, read-only) and it is read as it is."""
    db, note = _open(rebuild)
    try:
        if note is None:
            note = _synced(db)
    except sqlite3.Error as exc:
        db.close()
        raise errors.OutputError(f"the history store {_store()} cannot be read "
                                 f"({safe_text.one_line(exc)}); "
                                 f"{_remedy(exc, rebuild)}") from None
    if note:
        console.print(f"note: {note}", markup=False, soft_wrap=True)
    return db


def _open(rebuild: bool) -> tuple[sqlite3.Connection, str | None]:
    """The store, and a line when it is opened for reading only."""
    try:
        return history_store.connect(fresh=rebuild), None
    except sqlite3.Error as exc:
        if history_store.unwritable(exc) != history_store.READ_ONLY or rebuild:
            raise _cannot_open(exc, rebuild) from None
    except (OSError, NewerSchema) as exc:
        raise _cannot_open(exc, rebuild) from None
    try:
        return history_store.connect_read_only(), _read_only_note()
    except (sqlite3.Error, OSError, NewerSchema) as exc:
        raise _cannot_open(exc, rebuild) from None


def _synced(db: sqlite3.Connection) -> str | None:
    """Sync the store; a line instead where it cannot be written now."""
    try:
        history_store.sync(db)
    except sqlite3.Error as exc:
        why = history_store.unwritable(exc)
        if why == history_store.READ_ONLY:
            return _read_only_note()
        if why == history_store.BUSY:
            return (f"the history store {_store()} is busy (another process writes it): "
                    "shown without syncing, runs since its last sync may be missing")
        raise
    return None


def _read_only_note() -> str:
    return (f"the history store {_store()} is read-only: shown as it is, without syncing "
            "(runs since its last sync are missing)")


def _cannot_open(exc: Exception, rebuild: bool) -> errors.OutputError:
    what = "remove" if rebuild and isinstance(exc, OSError) else "open"
    return errors.OutputError(f"cannot {what} the history store {_store()}: "
                              f"{safe_text.one_line(exc)}; {_remedy(exc, rebuild)}")


def _remedy(exc: Exception, rebuild: bool) -> str:
    """What to do next. --rebuild only where it can help: never after a --rebuild, nor for
    a path it cannot remove (a folder where the file goes), which would send the user round
    in a loop."""
    path = history_store.store_path()
    if isinstance(exc, sqlite3.Error) and history_store.unwritable(exc) == history_store.BUSY:
        return "another process holds it: try again once it is done"
    if (path.exists() and not path.is_file()) or rebuild:
        return (f"move or remove {_store()} yourself (a store is one file, made again from "
                "the run folders by the next `gpubench history`)")
    return "--rebuild makes it again from the run folders"


def _store() -> str:
    return safe_text.short_path(history_store.store_path())


def _chosen(point: tuple[str, ...], request: HistoryRequest) -> bool:
    """Whether a point (history_store.POINT's family, variant, dtype, shape, mode) is
    among the variants and shapes asked for."""
    _, variant, _, shape, _ = point
    if request.variants and variant not in request.variants:
        return False
    return not request.shapes or any(_same_shape(shape, s) for s in request.shapes)


def _same_shape(shape: str, wanted: str) -> bool:
    """'M=1024,N=1024,K=1024' as written, or a size ('2^20', '1M') for 'n=1048576'."""
    if shape.replace(" ", "") == wanted.replace(" ", ""):
        return True
    try:
        return shape == f"n={parse_size(wanted)}"
    except ValueError:
        return False


DAYS = re.compile(r"^(\d+)d$")


def _since(text: str | None) -> float | None:
    """'14d' (the last 14 days) or an ISO date 'YYYY-MM-DD' as Unix seconds (UTC)."""
    if text is None:
        return None
    days = DAYS.match(text.strip())
    if days:
        return time.time() - int(days.group(1)) * 86400
    try:
        return calendar.timegm(time.strptime(text.strip(), "%Y-%m-%d"))
    except ValueError:
        raise errors.UsageError(f"--since takes a date (YYYY-MM-DD) or days (14d), not "
                                f"'{safe_text.one_line(text)}'") from None


def _export(rows: list[HistoryRow], path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame([row.to_dict() for row in rows], columns=history_store.COLUMNS)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".parquet":
            frame.to_parquet(path, index=False)  # typed columns: no cell is a formula
        else:
            # names and subjects are the user's: results.csv's rule for every text cell (a
            # leading = + - @ is text to a spreadsheet, an ESC byte is written as \x1b)
            safe = [{k: safe_text.csv_cell(v) for k, v in row.to_dict().items()} for row in rows]
            text = pd.DataFrame(safe, columns=history_store.COLUMNS).to_csv(index=False)
            write_output(path, text)
    except ImportError:  # pandas' Parquet needs pyarrow or fastparquet
        raise errors.EnvironmentProblem("--export to Parquet needs pyarrow (pip install "
                                        "pyarrow, or gpubench[parquet])") from None
    except OSError as exc:
        raise errors.OutputError(f"cannot write {safe_text.short_path(path)}: "
                                 f"{exc.strerror or exc}") from None


def _write_outputs(request: HistoryRequest, seen: _Seen, console: Console) -> None:
    summary = seen.totals.line(len(seen.worse))
    if request.markdown is not None:
        text = markdown([one for one in seen.kept if one.changes], seen.worse, summary)
        if str(request.markdown) == "-":
            console.print(text, markup=False, highlight=False)
        else:
            _write(request.markdown, text)
    if request.html is not None:
        generated = time.strftime("generated %Y-%m-%d %H:%M UTC", time.gmtime())
        _write(request.html, render_history(seen.kept, seen.worse, generated, summary))
        console.print(f"history page: {safe_text.short_path(request.html)}", markup=False)


def _write(path: Path, text: str) -> None:
    try:
        write_output(path, text)
    except OSError as exc:
        raise errors.OutputError(f"cannot write {safe_text.short_path(path)}: "
                                 f"{exc.strerror or exc}") from None

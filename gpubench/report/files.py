"""Where a run's files go: profiles/<UTC time>-<families>, one folder per run; and its
HTML page (`gpubench report`, `gpubench run --report`).

The run document itself (results.json, results.csv) is written by
gpubench/records/run.py, which also reads it back.
"""

from __future__ import annotations

import datetime as dt
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from gpubench import errors
from gpubench.analysis.comparison import DEFAULT_THRESHOLD, compare_runs
from gpubench.records.run import RunDocument, atomic_write
from gpubench.report.html import RunComparisonView, render_report

REPORT_NAME = "report.html"


def new_run_dir(base: Path, families: list[str]) -> Path:
    """profiles/<UTC timestamp>-<families>, made unique."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    label = "-".join(families)[:40] or "run"
    candidate = base / f"{stamp}-{label}"
    suffix = 2
    while candidate.exists():
        candidate = base / f"{stamp}-{label}-{suffix}"
        suffix += 1
    return candidate


def comparisons(runs: list[tuple[str, RunDocument]],
                threshold: float = DEFAULT_THRESHOLD) -> list[RunComparisonView]:
    """Each later run against the first: the first is the base the user named first."""
    (base_name, base), *later = runs
    return [RunComparisonView(base_name, name, compare_runs(base, run, threshold))
            for name, run in later]


def default_output(runs: list[tuple[str, RunDocument]]) -> Path:
    """report.html in the last run's folder; compared with others, named after the base."""
    last = Path(runs[-1][0])
    if len(runs) == 1:
        return last / REPORT_NAME
    return last / f"report-vs-{Path(runs[0][0]).name}.html"


def write_report(runs: list[tuple[str, RunDocument]], output: Path | None) -> Path:
    """Render and write the page; returns where it went (exit 12 when it cannot be written)."""
    path = output or default_output(runs)
    page = render_report(runs, comparisons(runs), generated=f"generated "
                         f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} by gpubench {_version()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, page)
        path.chmod(0o644)  # a page to share: not the private mode of the temporary file
    except OSError as exc:
        raise errors.OutputError(f"cannot write the report to {path}: "
                                 f"{exc.strerror or exc}") from None
    return path


def _version() -> str:
    try:
        return version("gpubench")
    except PackageNotFoundError:
        return "(not installed)"

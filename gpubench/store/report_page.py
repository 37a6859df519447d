"""A run's HTML page on disk (`gpubench report`, `gpubench run --report`): the runs, each
later one compared with the first, rendered by report/html.py and written atomically beside
the results (files.write_output), so a killed write leaves no half page."""

from __future__ import annotations

import time
from pathlib import Path

from gpubench import errors
from gpubench.analysis.comparison import DEFAULT_THRESHOLD, compare_runs
from gpubench.files import atomic_write, write_output
from gpubench.records.run import RunDocument
from gpubench.report.html import RunComparisonView, chart_specs, render_report
from gpubench.store.chart_files import write_chart_files
from gpubench.timing.envinfo import gpubench_version

REPORT_NAME = "report.html"


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
    generated = f"generated {time.strftime('%Y-%m-%d %H:%M:%S %Z')} by gpubench " \
                f"{gpubench_version()}"
    page = render_report(runs, comparisons(runs), generated=generated)
    try:
        if output is None:
            # the run folder's own page: replaced, never followed, since a folder from
            # elsewhere (an artifact, a tarball) may hold a report.html that links out of it
            atomic_write(path, page)
        else:
            # a page to share: 0644, not the private mode of the temporary file; a
            # symlink, a device or a FIFO named by -o is written through (files.write_output)
            write_output(path, page, mode=0o644)
    except OSError as exc:
        raise errors.OutputError(f"cannot write the report to {path}: "
                                 f"{exc.strerror or exc}") from None
    return path


def write_charts(runs: list[tuple[str, RunDocument]], folder: Path, kind: str) -> list[Path]:
    """Each chart of the page as a file in `folder` ('svg' or 'png'): store/chart_files.py."""
    return write_chart_files(chart_specs(runs, comparisons(runs)), folder, kind)

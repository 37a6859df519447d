"""`gpubench report RUN [RUN ...]`: the runs as one offline HTML page, or as markdown."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpubench import errors
from gpubench.analysis.comparison import DEFAULT_THRESHOLD, compare_runs
from gpubench.records.run import RunDocument
from gpubench.report.html import RunComparisonView, render_report
from gpubench.run.folder import atomic_write, read_run, resolve_run

REPORT_NAME = "report.html"


def load_runs(references: tuple[str, ...]) -> list[tuple[str, RunDocument]]:
    """(folder, document) per reference; a bad one is a usage error before anything else."""
    loaded = []
    for reference in references:
        folder = resolve_run(reference)
        loaded.append((str(folder), read_run(folder)))
    return loaded


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


@dataclass(frozen=True)
class ReportRequest:
    """Everything `gpubench report` was asked for, built once by the CLI."""

    runs: tuple[str, ...]  # run folders, 'latest', 'latest~N'; later ones compared with the first
    output: Path | None = None  # -o; None: report.html in the last run's folder
    markdown: bool = False  # the tables as markdown on stdout (and the HTML only with -o)


def report_command(request: ReportRequest, console: Console) -> int:
    runs = load_runs(request.runs)
    if request.markdown:
        sys.stdout.write(report_markdown(runs))
        if request.output is None:
            return errors.EXIT_OK
    path = write_report(runs, request.output)
    console.print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB, opens offline)",
                  markup=False, soft_wrap=True)
    return errors.EXIT_OK


def report_markdown(runs: list[tuple[str, RunDocument]]) -> str:
    """Every run's tables, then each comparison with the first run: a PR comment."""
    from gpubench.report.compare_view import compare_markdown
    from gpubench.report.table import group_markdown, groups_of

    parts = []
    for name, run in runs:
        device = run.env.get("gpu") or "CPU"
        parts.append(f"### gpubench run `{name}` on {device}, {run.meta.get('started', '')}\n")
        parts += [group_markdown(group, device) for group in groups_of(run.results)]
    parts += [compare_markdown(view.comparison, view.base_name, view.new_name)
              for view in comparisons(runs)]
    return "\n".join(parts)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpubench")
    except PackageNotFoundError:
        return "(not installed)"

"""`gpubench report RUN [RUN ...]`: the runs as one offline HTML page, or as markdown."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpubench import errors, safe_text
from gpubench.records.run import RunDocument
from gpubench.store.folder import read_run, resolve_run
from gpubench.store.report_page import comparisons, write_charts, write_report


def load_runs(references: tuple[str, ...]) -> list[tuple[str, RunDocument]]:
    """(folder, document) per reference; a bad one is a usage error before anything else."""
    loaded = []
    for reference in references:
        folder = resolve_run(reference)
        loaded.append((str(folder), read_run(folder)))
    return loaded


@dataclass(frozen=True)
class ReportRequest:
    """Everything `gpubench report` was asked for, built once by the CLI."""

    runs: tuple[str, ...]  # run folders, 'latest', 'latest~N'; later ones compared with the first
    output: Path | None = None  # -o; None: report.html in the last run's folder
    markdown: bool = False  # the tables as markdown on stdout (and the HTML only with -o)
    svg: Path | None = None  # --svg DIR: each chart as an SVG file there (headless Chromium)
    png: Path | None = None  # --png DIR: each chart as a PNG file there (headless Chromium)


def execute(request: ReportRequest, console: Console) -> int:
    runs = load_runs(request.runs)
    for name, run in runs:
        if run.incomplete:  # stderr: stdout may carry the markdown
            sys.stderr.write(f"warning: run {name} is incomplete: {run.incomplete}\n")
    for kind, folder in (("svg", request.svg), ("png", request.png)):
        if folder is not None:
            paths = write_charts(runs, folder, kind)
            console.print(f"charts: {len(paths)} {kind.upper()} file(s) in {folder}",
                          markup=False, soft_wrap=True)
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
        heading = safe_text.markdown(f"{device}, {run.meta.get('started', '')}")
        parts.append(f"### gpubench run `{safe_text.markdown(name)}` on {heading}\n")
        if run.incomplete:
            parts.append(f"**Incomplete run:** {safe_text.markdown(run.incomplete)}.\n")
        parts += [group_markdown(group, device) for group in groups_of(run.results)]
    parts += [compare_markdown(view.comparison, view.base_name, view.new_name)
              for view in comparisons(runs)]
    return "\n".join(parts)

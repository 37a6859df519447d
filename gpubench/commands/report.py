"""`gpubench report RUN [RUN ...]`: the runs as one offline HTML page, or as markdown."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from gpubench import errors
from gpubench.records.run import RunDocument, resolve_run
from gpubench.report.files import comparisons, write_report

__all__ = ["comparisons", "load_runs", "report_command", "report_markdown", "write_report"]


def load_runs(references: tuple[str, ...]) -> list[tuple[str, RunDocument]]:
    """(folder, document) per reference; a bad one is a usage error before anything else."""
    loaded = []
    for reference in references:
        folder = resolve_run(reference)
        loaded.append((str(folder), RunDocument.load(folder)))
    return loaded


def report_command(references: tuple[str, ...], output: Path | None, markdown: bool,
                   console: Console) -> int:
    runs = load_runs(references)
    if markdown:
        sys.stdout.write(report_markdown(runs))
        if output is None:
            return errors.EXIT_OK
    path = write_report(runs, output)
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

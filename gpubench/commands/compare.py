"""`gpubench compare BASE NEW`: load two run documents, compare them, show the verdicts."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from rich.console import Console

from gpubench import errors
from gpubench.analysis.comparison import compare_runs
from gpubench.records.strict_json import strict_dumps
from gpubench.report.compare_view import compare_markdown, compare_table, summary_line
from gpubench.run.folder import read_run, resolve_run


@dataclass(frozen=True)
class CompareRequest:
    """Everything `gpubench compare` was asked for, built once by the CLI."""

    base: str  # a run folder, 'latest' or 'latest~N'
    new: str
    threshold: float  # a fraction: changes within +-it are SAME
    fail_on_regression: bool = False  # exit EXIT_REGRESSION when any point is SLOWER
    markdown: bool = False  # a markdown table on stdout
    as_json: bool = False  # the comparison as JSON on stdout


def compare_command(request: CompareRequest, console: Console) -> int:
    base_dir, new_dir = resolve_run(request.base), resolve_run(request.new)
    result = compare_runs(read_run(base_dir), read_run(new_dir),
                          request.threshold)
    if request.as_json:
        document = {"base": str(base_dir), "new": str(new_dir), **result.to_dict()}
        sys.stdout.write(strict_dumps(document) + "\n")
    elif request.markdown:
        sys.stdout.write(compare_markdown(result, str(base_dir), str(new_dir)))
    else:
        console.print(compare_table(result, str(base_dir), str(new_dir)))
    if request.fail_on_regression and result.regressions():
        names = ", ".join(p.key.text() for p in result.regressions())
        sys.stderr.write(f"regression: {summary_line(result)}: {names}\n")
        return errors.EXIT_REGRESSION
    return errors.EXIT_OK

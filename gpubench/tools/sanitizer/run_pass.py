"""The pass of `gpubench run --sanitize`: memcheck once per variant before anything is
timed, then each of the variant's rows marked with what it found.

before_run runs memcheck on each variant at its smallest planned shape (the tool slows
kernels ~10-100x, and an out-of-bounds access shows at any size); apply sets the mark
(records/features/sanitizer.py: its results.csv column and the table's '*') and, when
memcheck found something or could not run, a warning. Without a GPU or the tool it says
so once and the run goes on.
"""

from __future__ import annotations

import math

from gpubench import errors
from gpubench.records import result as R
from gpubench.records.warning import TimingWarning
from gpubench.run.pipeline import RunContext
from gpubench.tools.find import find_tool
from gpubench.tools.sanitizer.log import short_file, summarize
from gpubench.tools.sanitizer.task import (
    SANITIZE_TIMEOUT_S,
    Sanitized,
    sanitize_task,
    sources_of,
)


class SanitizeMarks:
    """`--sanitize`: {(family, variant): mark} from before_run, set on every row."""

    name = "sanitize"
    after_table = False

    def __init__(self) -> None:
        self.marks: dict[tuple[str, str], dict] = {}

    def enabled(self, request) -> bool:
        return bool(request.sanitize)

    def before_run(self, ctx: RunContext) -> None:
        if not ctx.machine.has_cuda:
            ctx.say("--sanitize: skipped — compute-sanitizer checks CUDA kernels, and this "
                    "run has no CUDA GPU")
            return
        try:
            sanitizer = find_tool("compute-sanitizer")
        except errors.GpubenchError as exc:
            ctx.say(f"--sanitize: {exc}")
            return
        for key, point in smallest_points(ctx.points).items():
            ctx.say(f"--sanitize: memcheck on {key[0]}/{key[1]} {point.shape.label()} ...")
            try:
                outcome = sanitize_task(sanitizer, point.task(0), ctx.run_dir / "sanitize",
                                        ("memcheck",), SANITIZE_TIMEOUT_S,
                                        sources_of(point.family, point.variant))
            except errors.GpubenchError as exc:
                outcome = Sanitized(key[1], error=exc)
            self.marks[key] = run_mark(outcome)

    def apply(self, group: list[R.Result], ctx: RunContext) -> list[R.Result]:
        if not self.marks:
            return group
        return [mark_result(r, self.marks.get((r.family, r.variant))) for r in group]


def smallest_points(points: list) -> dict[tuple[str, str], object]:
    """Each variant's planned point of the fewest elements (skipped points left out)."""
    first: dict[tuple[str, str], object] = {}
    for point in points:
        key = (point.family.name, point.variant.name)
        if not point.skip and (key not in first or _size(point) < _size(first[key])):
            first[key] = point
    return first


def _size(point) -> int:
    """A shape's element count, to find a variant's smallest point."""
    return math.prod(point.shape.values())


def run_mark(outcome: Sanitized) -> dict:
    """What `run --sanitize` records on each of a variant's rows: memcheck's folded
    findings (kind, kernel, where, count), or the error that stopped the tool."""
    if outcome.error is not None:
        return {"tool": "memcheck", "findings": None, "error": str(outcome.error), "rows": []}
    findings = summarize(f for log in outcome.report.logs for f in log.findings)
    rows = [{"kind": f.kind, "kernel": f.kernel, "count": f.count,
             "where": f"{short_file(f.file)}:{f.line}" if f.file else f"pc {f.pc}"}
            for f in findings]
    return {"tool": "memcheck", "findings": len(findings), "error": None, "rows": rows}


def mark_result(result, mark: dict | None):
    """The result with its variant's memcheck outcome, and a warning when it found
    something or could not run."""
    if mark is None:
        return result
    remedy = (f"gpubench sanitize {result.family} --variant {result.variant} shows every "
              "finding at its source line")
    warning = None
    if mark["error"]:
        warning = TimingWarning("sanitizer", f"memcheck could not run: {mark['error']}", remedy)
    elif mark["findings"]:
        first = mark["rows"][0]
        warning = TimingWarning("sanitizer", f"memcheck found {mark['findings']} problem(s), "
                                f"first: {first['kind']} in {first['kernel']} at "
                                f"{first['where']}", remedy)
    warnings = result.warnings + ((warning,) if warning else ())
    return result.with_derived(sanitizer=mark, warnings=warnings)

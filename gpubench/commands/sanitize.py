"""`gpubench sanitize`: each variant's call under NVIDIA compute-sanitizer, findings shown
at the user's own source lines.

For each variant and tool (memcheck, racecheck, initcheck, synccheck): the one-shot worker
(build, inputs, check, warm-up, one call) under `compute-sanitizer --tool T --xml --save`,
through the one tool driver (tool_driver.py), with PyTorch's caching allocator off:
otherwise a one-past-the-end write lands inside a larger cached block and memcheck sees
nothing (recorded on the H200: 0 errors with the cache, the bug found without it). The
XML is parsed and folded (profilers/sanitizer.py), each finding's file and line mapped to
the variant's sources by the names its build's `#line` directives gave them.

compute-sanitizer has no range filter: the kernels that build the inputs and check the
output run under it too. They are PyTorch's own; a finding in them is shown under their
kernel name, so it is told apart from the variant's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from gpubench import errors
from gpubench.commands.targets import TargetChoice, resolve_target
from gpubench.records.strict_json import strict_dumps
from gpubench.run.protocol import Task
from gpubench.run.worker_process import worker_env
from gpubench.tools.driver import Tool, ToolRun, each_point, run_task
from gpubench.tools.find import Completed, find_tool
from gpubench.tools.sanitizer.command import ALLOCATOR_OFF, sanitizer_argv
from gpubench.tools.sanitizer.log import TOOLS, SanitizerLog, VariantReport, read_xml

DEFAULT_TIMEOUT_S = 600.0  # a build (~20-40 s) plus a call slowed ~100x by the checker


class SanitizerTool(Tool):
    """compute-sanitizer running one of its tools; records saved as <stem>.xml."""

    name = "sanitizer"

    def __init__(self, check: str) -> None:
        self.check = check

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        return sanitizer_argv(executable, self.check, f"{stem}.xml", target)

    def env(self, stem: Path) -> dict:
        return {**worker_env("cuda"), **ALLOCATOR_OFF}

    def timeout_message(self, timeout_s: float, completed: Completed, leftovers) -> str:
        return (f"compute-sanitizer --tool {self.check} ran past --timeout {timeout_s:g} s "
                f"and was killed (log: {completed.log}); the checkers slow kernels down "
                "~10-100x: a smaller --size, or a longer --timeout")


@dataclass
class Sanitized:
    """One variant's outcome: a report per tool that ran, or the error that stopped it."""

    variant: str
    report: VariantReport | None = None
    check: dict | None = None
    worker_error: str | None = None
    error: errors.GpubenchError | None = None

    @property
    def found(self) -> bool:
        return self.report is not None and any(log.findings for log in self.report.logs)


def sanitize_task(sanitizer: str, task: Task, run_dir: Path, checks: tuple[str, ...],
                  timeout_s: float, sources: dict[str, str]) -> Sanitized:
    """Every requested tool on one task, in turn; the findings of all of them."""
    logs, worker = [], {}
    for check in checks:
        run = run_task(SanitizerTool(check), sanitizer, task, run_dir, timeout_s,
                       use_nvtx=False, suffix=f"-{check}")
        logs.append(_log_of(run, check))
        worker = run.worker if isinstance(run.worker, dict) else {}
    return Sanitized(task.variant, VariantReport(task.variant, tuple(logs), sources),
                     worker.get("check"),
                     worker.get("error") if worker.get("status") == "error" else None)


def _log_of(run: ToolRun, check: str) -> SanitizerLog:
    """The tool's XML, read. No XML means the tool itself failed; with one, a non-zero exit
    is the findings (--error-exitcode) or the call's own failure ("Target application
    returned an error": a variant that fails its check), which the view notes."""
    xml = run.file(".xml")
    if not xml.is_file():
        tail = " | ".join(run.completed.output.strip().splitlines()[-3:])
        raise errors.ProfilerError(
            f"compute-sanitizer --tool {check} wrote no records (exit "
            f"{run.completed.returncode}; log: {run.completed.log}): {tail}")
    return read_xml(xml.read_text(errors="replace"), check)


def run_mark(outcome: Sanitized) -> dict:
    """What `run --sanitize` records on each of a variant's rows: memcheck's folded
    findings (kind, kernel, where, count), or the error that stopped the tool."""
    from gpubench.tools.sanitizer.log import short_file, summarize

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
    from gpubench.timing.noise import Warning

    if mark is None:
        return result
    remedy = (f"gpubench sanitize {result.family} --variant {result.variant} shows every "
              "finding at its source line")
    warning = None
    if mark["error"]:
        warning = Warning("sanitizer", f"memcheck could not run: {mark['error']}", remedy)
    elif mark["findings"]:
        first = mark["rows"][0]
        warning = Warning("sanitizer", f"memcheck found {mark['findings']} problem(s), first: "
                                       f"{first['kind']} in {first['kernel']} at "
                                       f"{first['where']}", remedy)
    warnings = result.warnings + ((warning,) if warning else ())
    return result.with_derived(sanitizer=mark, warnings=warnings)


def chosen_tools(names: tuple[str, ...]) -> tuple[str, ...]:
    """--tool memcheck,racecheck | all (default: memcheck), in compute-sanitizer's order."""
    wanted = {n.strip() for name in names for n in name.split(",") if n.strip()} or {"memcheck"}
    if "all" in wanted:
        return TOOLS
    unknown = wanted - set(TOOLS)
    if unknown:
        raise errors.unknown_name("compute-sanitizer tool", sorted(unknown)[0], TOOLS)
    return tuple(t for t in TOOLS if t in wanted)


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class SanitizeRequest:
    """Everything `gpubench sanitize` was asked for, built once by the CLI."""

    target: TargetChoice  # FAMILY, --variant, --size/--shape, --dtype, --kernels-dir
    tools: tuple[str, ...] = ()  # --tool, as given (chosen_tools reads it; (): memcheck)
    sanitizer_path: str | None = None  # --sanitizer-path; None: PATH, then /usr/local/cuda/bin
    timeout_s: float = DEFAULT_TIMEOUT_S  # one tool run, build included
    out: Path | None = None  # --out; None: profiles/<run-id>
    as_json: bool = False  # --json: findings on stdout


@dataclass
class SanitizeCommand:
    request: SanitizeRequest
    console: Console
    outcomes: list[Sanitized] = field(default_factory=list)

    def execute(self) -> int:
        request = self.request
        checks = chosen_tools(request.tools)
        sanitizer = find_tool("compute-sanitizer", request.sanitizer_path)  # before anything slow
        target = resolve_target(request.target, request.out, "sanitize", largest=False)
        self._say(f"compute-sanitizer {sanitizer} ({', '.join(checks)}) on "
                  f"{target.describe()}; PyTorch's caching allocator off")
        self.outcomes = each_point(
            target.points,
            lambda task: sanitize_task(
                sanitizer, task, target.run_dir, checks, request.timeout_s,
                sources_of(target.family, target.family.variant(task.variant))),
            lambda variant, error: Sanitized(variant, error=error))
        return self._show()

    def _show(self) -> int:
        from gpubench.tools.sanitizer.view import findings_to_json, sanitize_view

        reports = [o.report for o in self.outcomes if o.report is not None]
        if self.request.as_json:
            document = findings_to_json(reports)
            document["errors"] = {o.variant: str(o.error) for o in self.outcomes if o.error}
            sys.stdout.write(strict_dumps(document) + "\n")
        else:
            for outcome in self.outcomes:
                self._show_one(outcome, sanitize_view)
        failed = [o for o in self.outcomes if o.error is not None]
        if failed:
            return failed[0].error.exit_code
        return errors.EXIT_SANITIZER_FOUND if any(o.found for o in self.outcomes) else (
            errors.EXIT_OK)

    def _show_one(self, outcome: Sanitized, sanitize_view) -> None:
        self.console.print(Rule(outcome.variant))
        if outcome.error is not None:
            self.console.print(f"[bold red]error:[/] {escape(str(outcome.error))}")
            return
        self.console.print(sanitize_view([outcome.report]))
        if outcome.worker_error:
            self.console.print(f"[yellow]the call under the tool failed:[/] "
                               f"{escape(outcome.worker_error)}")
        elif outcome.check and not outcome.check.get("passed", True):
            self.console.print("[yellow]note:[/] this variant also FAILS its correctness check")

    def _say(self, text: str) -> None:
        if not self.request.as_json:
            self.console.print(text, markup=False)
        else:
            print(text, file=sys.stderr)


def sources_of(family, variant) -> dict[str, str]:
    """The variant's sources by the names its line info uses: its build's #line names
    (CUDA), or its Python file (Triton: its line info names the .py file); {} for PyTorch."""
    from gpubench.families.sources import source_texts
    from gpubench.families.spec import CudaVariant, Machine, TritonVariant

    if isinstance(variant, CudaVariant):
        return source_texts(family, variant, Machine(has_cuda=True, has_triton=True))
    if isinstance(variant, TritonVariant):
        path = family.directory / variant.module
        return {str(path.resolve()): path.read_text()}
    return {}

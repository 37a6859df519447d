"""compute-sanitizer on one planned task: every requested tool in turn, its XML read back.

Used by `gpubench sanitize` (commands/sanitize.py) and by `gpubench run --sanitize`'s pass
(run_pass.py). PyTorch's caching allocator is off under the tool: otherwise a one-past-
the-end write lands inside a larger cached block and memcheck sees nothing (recorded on
the H200: 0 errors with the cache, the bug found without it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpubench import errors
from gpubench.run.lanes.protocol import Task
from gpubench.run.lanes.worker_process import worker_env
from gpubench.timing.check_result import CheckResult, check_result_of
from gpubench.tools.driver import Tool, ToolRun, run_task
from gpubench.tools.find import Completed
from gpubench.tools.sanitizer.command import ALLOCATOR_OFF, sanitizer_argv
from gpubench.tools.sanitizer.log import SanitizerLog, VariantReport, read_xml

# One tool run on one variant: a build (~20-40 s) plus a call slowed ~100x by the checker.
SANITIZE_TIMEOUT_S = 600.0


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
    check: CheckResult | None = None
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
                     check_result_of(worker.get("check")),
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

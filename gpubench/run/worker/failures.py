"""A failed point as the worker reports it: BUILD ERROR at the compiler's file:line, or
ERROR at the innermost line of the family's own files. One place, for the worker
(execute.py) and the build phase's builders (builder.py), so both say it alike."""

from __future__ import annotations

from pathlib import Path

from gpubench.build.diagnostics import CompileError
from gpubench.records import error_site
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import Task
from gpubench.records.result import BUILD_ERROR, ERROR
from gpubench.records.worker_result import WorkerResult


def build_failure(exc: CompileError) -> WorkerResult:
    """BUILD ERROR: the compiler's first errors (file:line), the first one's source line, its
    build seconds (none for a build that failed earlier in this process: it took no time
    now, and "0.0 ns" would read as a measurement) and the whole log."""
    build = BuildInfo(compile_s=exc.seconds or None, cached=False,
                      log=str(exc.log_path) if exc.log_path else None)
    report = error_site.report_compile_error(exc.summary, _read_log(exc.log_path))
    return WorkerResult(BUILD_ERROR, exc.summary, build=build, error_site=report.evidence())


def family_roots(family) -> list[Path]:
    """The folders of a family's own files: its folder, and a leaderboard problem's and its
    submissions' folders (families/leaderboard/)."""
    return [Path(family.directory), *getattr(family, "source_roots", ())]


def variant_failure(exc: BaseException, task: Task, family=None) -> WorkerResult:
    """ERROR at the innermost line of the family's own files that raised (a helper, a
    Triton kernel, a TORCH_CHECK), with the whole traceback kept."""
    roots = family_roots(family) if family is not None else [Path(task.family_dir)]
    report = error_site.report_exception(exc, roots)
    return WorkerResult(ERROR, error_site.with_site(report.message, report.site),
                        error_site=report.evidence())


def _read_log(path: Path | None) -> str:
    try:
        return path.read_text(errors="replace") if path else ""
    except OSError:
        return ""

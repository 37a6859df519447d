"""One planned task under an external tool (ncu, nsys, compute-sanitizer): the one driver.

Every tool command does the same things: write the task file, start gpubench's
one-shot worker (`python -m gpubench.run.worker --once TASK`, ncu_command.worker_target) under
the tool with a hard
timeout that kills the whole process group (tool, worker, compilers), classify a
failure into gpubench's exit codes, read the worker's own result, and keep one
variant's failure with that variant while the others go on. A `Tool` says only what
differs: its argv, its environment, what its console text means, what it leaves
behind and how a timeout is explained.

Failure classes (errors.py): tool not found (ToolMissing, exit 6), no permission for
the GPU's counters (ProfilerPermission, 7), no kernel in the region (NoKernelsProfiled,
8), past --timeout (ProfilerTimeout, 9), anything else the tool or the profiled worker
reports (ProfilerError, 11).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from gpubench import errors
from gpubench.records.result import BUILD_ERROR
from gpubench.records.worker_result import MalformedWorkerResult, WorkerResult
from gpubench.run.lanes.protocol import Task, read_result
from gpubench.run.lanes.worker_process import worker_env
from gpubench.run.plan import Point
from gpubench.tools.find import Completed, run_tool
from gpubench.tools.ncu.command import worker_target


class Tool:
    """What one external tool needs beyond the common flow; subclasses override."""

    name = "tool"

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        raise NotImplementedError

    def env(self, stem: Path) -> dict:
        """The worker's environment under the tool (a CUDA worker's, by default)."""
        return worker_env("cuda")

    def finish(self, stem: Path) -> Any:
        """Runs whatever happened (timeout, Ctrl-C included): remove what the tool leaves
        behind; the value is kept in ToolRun.leftovers and offered to timeout_message."""
        return None

    def raise_problems(self, completed: Completed) -> None:
        """Raise the GpubenchError the tool's console text shows, if any (tools report
        many failures in their text, not in their exit status)."""

    def timeout_message(self, timeout_s: float, completed: Completed, leftovers: Any) -> str:
        return f"{self.name} ran past {timeout_s:g} s and was killed (log: {completed.log})"


@dataclass(frozen=True)
class ToolRun:
    """One task's run under a tool: the files' common stem, how the tool ended, what the
    worker wrote about its call (status, check, error), and the tool's leftovers."""

    stem: Path  # run_dir / <task stem><suffix>: every file of this run starts with it
    completed: Completed
    worker: Any
    leftovers: Any = None

    def file(self, suffix: str) -> Path:
        """`<stem><suffix>`: the report, XML, ... the tool wrote (stems may hold dots)."""
        return Path(f"{self.stem}{suffix}")

    def raise_if_worker_failed(self) -> None:
        if isinstance(self.worker, dict) and self.worker.get("status") == "error":
            raise errors.ProfilerError(f"the profiled worker failed: {self.worker.get('error')} "
                                       f"(log: {self.completed.log})")


def run_task(tool: Tool, executable: str, task: Task, run_dir: Path, timeout_s: float,
             use_nvtx: bool, suffix: str = "") -> ToolRun:
    """Write the task, run gpubench's one-shot worker under the tool (its call inside
    gpubench's NVTX range, or between cudaProfilerStart/Stop without the nvtx package),
    classify the outcome."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stem = run_dir / f"{task.stem}{suffix}"
    task_file, result_file = Path(f"{stem}.task.json"), Path(f"{stem}.result.json")
    task_file.write_text(task.to_json())
    target = worker_target(sys.executable, str(task_file), str(result_file), use_nvtx)
    return run_target(tool, executable, stem, target, result_file, timeout_s)


def run_target(tool: Tool, executable: str, stem: Path, target: list[str], result_file: Path,
               timeout_s: float) -> ToolRun:
    """Run `target` under the tool with a hard timeout; raise what went wrong, else the run.
    The tool's leftovers are removed first, whatever happened."""
    argv = tool.argv(executable, stem, target)
    try:
        done = run_tool(argv, timeout_s, Path(f"{stem}.{tool.name}.log"), env=tool.env(stem))
    finally:
        leftovers = tool.finish(stem)
    if done.timed_out:
        raise errors.ProfilerTimeout(tool.timeout_message(timeout_s, done, leftovers))
    worker = read_result(result_file)
    raise_build_failure(worker)  # before the tool's own text: "returned an error code (1)"
    tool.raise_problems(done)
    return ToolRun(stem, done, worker, leftovers)


def raise_build_failure(worker: Any) -> None:
    """BuildFailed when the one-shot worker says its variant did not build: the compiler's
    first errors (file:line), the line of source and where the whole log is."""
    if not isinstance(worker, dict) or worker.get("status") != BUILD_ERROR:
        return
    try:
        result = WorkerResult.from_dict(worker)
    except MalformedWorkerResult:
        result = WorkerResult(BUILD_ERROR, worker.get("error"))
    site = result.error_site
    source = f"\n    {site.source}" if site and site.source else ""
    where = f"\n(compiler log: {result.build.log})" if result.build.log else ""
    raise errors.BuildFailed(f"the variant does not build: {result.error}{source}{where}")


Outcome = TypeVar("Outcome")


def each_point(points: list[Point], attempt: Callable[[Task], Outcome],
               failed: Callable[[str, errors.GpubenchError], Outcome],
               stop_after_timeout: bool = False) -> list[Outcome]:
    """`attempt` on each point's task; an error stays with its variant and the others go
    on. With `stop_after_timeout`, the points after a timeout are not tried (a hanging
    tool hangs for every variant, and each try would cost the whole timeout again)."""
    outcomes: list[Outcome] = []
    timed_out = False
    for point in points:
        if timed_out and stop_after_timeout:
            outcomes.append(failed(point.variant.name, errors.ProfilerTimeout(
                "not tried: the tool timed out on the previous variant")))
            continue
        try:
            outcomes.append(attempt(point.task(0)))
        except errors.GpubenchError as exc:
            timed_out = isinstance(exc, errors.ProfilerTimeout)
            outcomes.append(failed(point.variant.name, exc))
    return outcomes

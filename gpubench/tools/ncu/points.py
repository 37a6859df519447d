"""ncu on planned points, one report each (`gpubench ncu`, `gpubench run --ncu`), and the
short summary `run --ncu` keeps. Moved from commands/ncu.py so that a run's --ncu pass
(tools/ncu/run_pass.py) and the ncu command share it without one command importing
another."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpubench import errors
from gpubench.run.lanes.protocol import Task
from gpubench.run.plan import Point
from gpubench.timing import nvtx_ranges
from gpubench.timing.check_result import CheckResult, check_result_of
from gpubench.tools.driver import Tool, each_point, run_task
from gpubench.tools.find import find_tool
from gpubench.tools.ncu import command as ncu_command
from gpubench.tools.ncu.console import missing_sections, raise_console_problems


@dataclass(frozen=True)
class NcuOptions:
    set_name: str = ncu_command.DEFAULT_SET
    sections: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    ncu_path: str | None = None
    timeout_s: float = 600.0
    clock_control: str = "none"
    include_info: bool = False


@dataclass
class Profiled:
    """One variant's outcome: its report and kernels, or the error that stopped it."""

    variant: str
    report: Path | None = None
    profiles: list = field(default_factory=list)
    check: CheckResult | None = None
    error: errors.GpubenchError | None = None

    @property
    def main(self):
        """The launch that matters most: the longest one."""
        return max(self.profiles, key=lambda p: p.duration_ns or 0.0) if self.profiles else None


class NcuTool(Tool):
    """ncu with the command's options: one report per task, failures read from its text."""

    name = "ncu"

    def __init__(self, options: NcuOptions, use_nvtx: bool) -> None:
        self.options, self.use_nvtx = options, use_nvtx

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        o = self.options
        return ncu_command.ncu_argv(executable, str(stem), target, set_name=o.set_name,
                                    sections=o.sections, metrics=o.metrics,
                                    clock_control=o.clock_control, use_nvtx=self.use_nvtx)

    def raise_problems(self, completed) -> None:
        raise_console_problems(completed.output, completed.log)

    def timeout_message(self, timeout_s: float, completed, leftovers) -> str:
        return (f"ncu ran past --timeout {timeout_s:.0f} s and was killed (log: "
                f"{completed.log}); each section replays the kernel, so slow kernels with many "
                "sections need more")


def profile_points(points: list[Point], run_dir: Path, options: NcuOptions) -> list[Profiled]:
    """Profile each point in its own ncu run; an error stays with its variant."""
    from gpubench.tools.ncu.report_module import import_ncu_report

    ncu = find_tool("ncu", options.ncu_path)
    module = import_ncu_report(ncu)
    tool = NcuTool(options, nvtx_ranges.available())
    return each_point(points, lambda task: _profile_task(tool, ncu, module, task, run_dir),
                      lambda variant, error: Profiled(variant, error=error))


def _profile_task(tool: NcuTool, ncu: str, module, task: Task, run_dir: Path) -> Profiled:
    """One task under ncu; its report (<family>-<variant>-<shape>.ncu-rep) read back."""
    from gpubench.tools.ncu.report import load_profiles

    run = run_task(tool, ncu, task, run_dir, tool.options.timeout_s, tool.use_nvtx)
    run.raise_if_worker_failed()
    report = run.file(".ncu-rep")
    if not report.is_file():
        raise errors.ProfilerError(f"ncu wrote no report (exit {run.completed.returncode}; "
                                   f"log: {run.completed.log})")
    profiles = load_profiles(report, module)
    _check_sections(profiles, tool.options)
    return Profiled(task.variant, report, profiles, check_result_of(run.worker.get("check")))


def _check_sections(profiles: list, options: NcuOptions) -> None:
    wanted = ncu_command.requested_sections(options.set_name, options.sections)
    for profile in profiles:
        if not profile.sections_complete:
            continue  # ncu's bundled ncu_report cannot list sections: nothing to check
        problem = missing_sections(wanted, profile.sections)
        if problem:
            raise errors.SectionMissing(problem.message)


def ncu_summary(outcome: Profiled) -> dict:
    """The short form `gpubench run --ncu` shows: duration, top SOL %, top hint."""
    profile = outcome.main
    if profile is None:
        return {"error": str(outcome.error) if outcome.error else "no kernel profiled"}
    metrics = profile.metrics
    sol = {k: metrics.get(k) for k in ("compute_throughput_pct", "memory_throughput_pct")}
    top_key = max(sol, key=lambda k: sol[k] or 0.0)
    hints = profile.hints()
    top = hints[0] if hints else None
    return {
        "kernel": profile.base_name or profile.name,
        "duration_ns": profile.duration_ns,
        "top_sol": "compute" if top_key.startswith("compute") else "memory",
        "top_sol_pct": sol[top_key],
        "top_hint": top.heading if top else None,
        "top_hint_speedup_pct": top.estimated_speedup_pct if top else None,
        "top_hint_speedup_type": top.speedup_type if top else None,
        "report": str(outcome.report),
    }

"""`gpubench run --ncu-check`: one ncu run per group, duration only, set beside the results.

The group's passing points go to one worker under ncu (`--ncu-check TASKS`), each
called ncu_agreement.CALLS times in its own NVTX range; ncu collects one metric,
gpu__time_duration.sum, for the launches in those ranges (one replay pass per
kernel). The report is read with ncu_report, the durations summed per call and
the verdicts made by gpubench/analysis/ncu_agreement.py (pure).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpubench import errors
from gpubench.analysis.ncu_agreement import CHECK_RANGE, attach, ncu_times
from gpubench.records import result as R
from gpubench.run.plan import Point
from gpubench.timing import nvtx_ranges
from gpubench.tools.driver import Tool, run_target
from gpubench.tools.find import find_tool
from gpubench.tools.ncu import command as ncu_command
from gpubench.tools.ncu.console import raise_console_problems


def check_group(group: list[R.Result], points: list[Point], run_dir: Path,
                ncu_path: str | None = None, timeout_s: float = 600.0) -> list[R.Result]:
    """The group's results, each passing one with its ncu_check (and a warning when it
    misses its target). Raises a GpubenchError when ncu is missing or fails."""
    from gpubench.tools.ncu.report import load_profiles
    from gpubench.tools.ncu.report_module import import_ncu_report

    chosen = passing_points(group, points)
    if not chosen:
        return group
    ncu = find_tool("ncu", ncu_path)
    module = import_ncu_report(ncu)
    labels = {f"{CHECK_RANGE}{i}": _identity(p) for i, p in enumerate(chosen)}
    first = group[0]
    stem = run_dir / f"ncu-check-{first.family}-{first.shape.slug()}-{first.dtype}"
    tasks_file, result_file = Path(f"{stem}.tasks.json"), Path(f"{stem}.result.json")
    tasks_file.write_text(json.dumps([p.task(0).to_dict() for p in chosen]))
    target = [sys.executable, "-m", "gpubench.run.worker", "--ncu-check", str(tasks_file),
              "--result", str(result_file)]
    run = run_target(DurationTool(list(labels)), ncu, stem, target, result_file, timeout_s)
    done = run.completed
    report = run.file(".ncu-rep")
    if not report.is_file():
        outcomes = run.worker or [{}]
        why = next((o.get("error") for o in outcomes if o.get("error")), None)
        raise errors.ProfilerError(f"ncu wrote no report ({why or f'exit {done.returncode}'}; "
                                   f"log: {done.log})")
    launches = [(label, p.duration_ns * 1e-9) for p in load_profiles(report, module)
                if p.duration_ns and (label := check_label(p.nvtx))]
    return attach(group, ncu_times(launches), labels)


class DurationTool(Tool):
    """ncu collecting gpu__time_duration alone, for the launches in the labelled ranges."""

    name = "ncu"

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        return ncu_command.duration_argv(executable, str(stem), target, self.labels,
                                         nvtx_ranges.available())

    def raise_problems(self, completed) -> None:
        raise_console_problems(completed.output, completed.log)


def check_label(nvtx: dict[str, tuple[str, ...]]) -> str | None:
    """The 'gb_check:<i>' range a launch ran in, in whichever domain it was pushed."""
    for ranges in nvtx.values():
        for name in reversed(ranges):
            if name.startswith(CHECK_RANGE):
                return name
    return None


def passing_points(group: list[R.Result], points: list[Point]) -> list[Point]:
    """The planned points of a finished group whose results passed (what a profiler reruns)."""
    passed = {r.variant for r in group if r.passed}
    key = (group[0].family, group[0].dtype, group[0].shape)
    return [p for p in points if p.group == key and p.variant.name in passed and not p.skip]


def _identity(point: Point) -> tuple:
    return (point.family.name, point.variant.name, point.dtype, point.shape.text())

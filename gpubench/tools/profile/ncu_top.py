"""`gpubench profile --ncu`: the program again under ncu, once per top kernel.

Each run profiles one launch: the kernel's first launch inside the region, picked by ncu's
function-name filter and --launch-skip (kernels.representative_launches), through the
one tool driver (hard timeout, failure classes). The report is read and shown with the
same reader and view as `gpubench ncu`, source lines included.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from gpubench import errors
from gpubench.tools.driver import Tool, run_target
from gpubench.tools.find import find_tool
from gpubench.tools.ncu import command as ncu_command
from gpubench.tools.ncu.console import raise_console_problems
from gpubench.tools.profile.kernels import Launch, Profile, representative_launches

# ncu replays the kernel once per section pass and runs the rest of the program at full
# speed: a few-second training step takes ~1 min per kernel.
NCU_TIMEOUT_S = 600.0


class LaunchTool(Tool):
    """ncu picking one launch of one kernel out of a whole program."""

    name = "ncu"

    def __init__(self, launch: Launch, env: dict) -> None:
        self.launch, self._env = launch, env

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        return ncu_command.launch_argv(executable, str(stem), target, self.launch.function,
                                       self.launch.skip)

    def env(self, stem: Path) -> dict:
        return self._env

    def raise_problems(self, completed) -> None:
        raise_console_problems(completed.output, completed.log)


def profile_top_kernels(python: str, program: list[str], profile: Profile, trace: dict,
                        run_dir: Path, top: int, console: Console, env: dict) -> int:
    """ncu on each of the `top` kernels; a problem with one is said and the next goes on.
    Returns the exit code of the first problem (7 without counter permission, ...), or 0."""
    from gpubench.tools.ncu.report import load_profiles
    from gpubench.tools.ncu.report_module import import_ncu_report
    from gpubench.tools.ncu.view import profile_view

    try:
        ncu = find_tool("ncu")
        module = import_ncu_report(ncu)
    except errors.GpubenchError as exc:
        console.print(f"--ncu: {exc}", markup=False)
        return exc.exit_code
    code = errors.EXIT_OK
    launches = representative_launches(trace, profile.groups[:top], profile.region,
                                       profile.skipped_instances)
    for index, launch in enumerate(launches, 1):
        console.print(Rule(f"ncu {index}/{len(launches)}: {launch.function} (launch "
                           f"{launch.skip + 1} of it)"))
        stem = run_dir / f"ncu-{index}-{launch.function[:60]}"
        try:
            run = run_target(LaunchTool(launch, env), ncu, stem, [python, *program],
                             Path(f"{stem}.none.json"), NCU_TIMEOUT_S)
            report = run.file(".ncu-rep")
            if not report.is_file():
                raise errors.ProfilerError(f"ncu wrote no report (exit "
                                           f"{run.completed.returncode}; log: "
                                           f"{run.completed.log})")
            for kernel in load_profiles(report, module):
                console.print(profile_view(kernel))
            console.print(f"report: {report}", markup=False)
        except errors.GpubenchError as exc:
            console.print(f"--ncu {launch.function}: {exc}", markup=False)
            code = code or exc.exit_code
    return code

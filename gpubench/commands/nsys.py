"""`gpubench nsys`: Nsight Systems on one variant (or several) of a family, its kernels summed up.

For each variant: a task file, then `nsys profile ... python -m gpubench.run.worker --once TASK`
(see profilers/nsys_command.py) recording only gpubench's NVTX range, then `nsys stats`
for the kernel and NVTX summaries (profilers/nsys_stats.py), shown as tables or JSON.

nsys is optional and, on the project's GPU machines, broken: the copy bundled with Nsight
Compute hangs after writing a multi-GB .qdstrm and never makes a report (docs/profilers.md).
So every nsys call runs under --timeout (run_tool kills its process group), nsys's
temporary files go to a private folder in the run folder (TMPDIR), and afterwards, however
the run ended, every .qdstrm and that folder are deleted, with the bytes freed reported.
Each failure is one line that points at `gpubench trace`, which needs no nsys.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from gpubench import errors, safe_text
from gpubench import format as fmt
from gpubench.codec import Record, saved_as
from gpubench.commands.command import JsonCommand
from gpubench.commands.targets import TargetRequest
from gpubench.records.strict_json import strict_dumps
from gpubench.run.lanes.protocol import Task
from gpubench.run.lanes.worker_process import worker_env
from gpubench.run.plan import Point
from gpubench.timing import nvtx_ranges
from gpubench.timing.check_result import CheckResult, check_result_of
from gpubench.tools.driver import Tool, ToolRun, each_point, run_task
from gpubench.tools.find import Completed, find_gpu_tool, run_tool
from gpubench.tools.nsys import command as nsys_command
from gpubench.tools.nsys.stats import TimingRow, kernel_rows, parse_stats, range_rows

DEFAULT_TIMEOUT_S = 120.0
INSTEAD = "use `gpubench trace` for a timeline instead (it needs no nsys)"
KNOWN_HANG = ("known: the nsys bundled with Nsight Compute 2025.3.1 hung on the H100/H200 "
              "machines gpubench was tested on, after writing a multi-GB .qdstrm, and never "
              "made a report (see gpubench's docs/profilers.md, Nsight Systems)")


@dataclass(frozen=True)
class NsysOptions:
    nsys_path: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Cleanup:
    """What was deleted after an nsys run: stray .qdstrm files and nsys's temporary folder."""

    files: int = 0
    bytes: int = 0

    def sentence(self) -> str:
        if not self.files:
            return "no stray .qdstrm or temporary file was left"
        return (f"the {self.files} stray .qdstrm/temporary file(s) it left ({self.bytes:,} "
                "bytes) were deleted")


@dataclass
class Traced(Record):
    """One variant's outcome: its report and summaries, or the error that stopped it. `nsys
    --json` writes it (through the codec) under its variant's name, the cleanup flat."""

    WRITTEN = ("report", "kernels", "ranges", "check", "removed_files", "removed_bytes",
               "error")

    variant: str
    report: Path | None = field(default=None, metadata=saved_as(write=str))
    kernels: list[TimingRow] = field(default_factory=list)
    ranges: list[TimingRow] = field(default_factory=list, metadata=saved_as("nvtx_ranges"))
    check: CheckResult | None = None
    cleanup: Cleanup = field(default_factory=Cleanup)
    error: errors.GpubenchError | None = field(default=None, metadata=saved_as(write=str))

    @property
    def removed_files(self) -> int:
        return self.cleanup.files

    @property
    def removed_bytes(self) -> int:
        return self.cleanup.bytes


# ---------------------------------------------------------------- the core


class NsysTool(Tool):
    """nsys profile recording gpubench's range; its temporary files kept in a private folder
    beside the report, deleted afterwards with every stray .qdstrm, however it ended."""

    name = "nsys"

    def __init__(self, run_dir: Path, use_nvtx: bool) -> None:
        self.run_dir, self.use_nvtx = run_dir, use_nvtx

    def argv(self, executable: str, stem: Path, target: list[str]) -> list[str]:
        return nsys_command.nsys_argv(executable, str(stem), target, self.use_nvtx)

    def env(self, stem: Path) -> dict:
        temp_dir = _temp_dir(stem)
        temp_dir.mkdir(parents=True, exist_ok=True)
        return _nsys_env(temp_dir)

    def finish(self, stem: Path) -> Cleanup:
        return remove_stray_files(self.run_dir, _temp_dir(stem))

    def timeout_message(self, timeout_s: float, completed: Completed, leftovers: Cleanup) -> str:
        return (f"nsys did not finish within --timeout {timeout_s:g} s and was killed "
                f"(log: {completed.log}); {KNOWN_HANG}; {leftovers.sentence()}; {INSTEAD}")


def _temp_dir(stem: Path) -> Path:
    return Path(f"{stem}.nsys-tmp")


def profile_points(nsys: str, points: list[Point], run_dir: Path,
                   options: NsysOptions) -> list[Traced]:
    """Run nsys on each variant in turn; an error stays with its variant. After a timeout
    the rest are not tried: a hanging nsys hangs for every variant, and each try would
    cost the whole --timeout again."""
    return each_point(points, lambda task: profile_task(nsys, task, run_dir, options),
                      lambda variant, error: Traced(variant, error=error),
                      stop_after_timeout=True)


def profile_task(nsys: str, task: Task, run_dir: Path, options: NsysOptions) -> Traced:
    """nsys profile + nsys stats on one task; raises ProfilerTimeout, ProfilerError, ...

    Stray .qdstrm files and the private TMPDIR are deleted whatever happens, before any
    error is raised, so the error can say so.
    """
    use_nvtx = nvtx_ranges.available()
    run = run_task(NsysTool(run_dir, use_nvtx), nsys, task, run_dir, options.timeout_s,
                   use_nvtx, suffix=f"-{task.dtype}")
    report = Path(nsys_command.report_path(str(run.stem)))
    _raise_run_problems(run, report)
    tables = _stats(nsys, report, run.file(".nsys-stats.log"), options)
    kernels = kernel_rows(tables)
    if not kernels:
        raise errors.NoKernelsProfiled(
            f"nsys recorded no kernel inside gpubench's range "
            f"({nsys_command.nvtx_capture() if use_nvtx else 'cudaProfilerStart/Stop'}; "
            f"report: {report}); {INSTEAD}")
    return Traced(task.variant, report, kernels, range_rows(tables),
                  check_result_of(run.worker.get("check")), run.leftovers)


def remove_stray_files(run_dir: Path, temp_dir: Path) -> Cleanup:
    """Delete every *.qdstrm under run_dir, then temp_dir and all in it; count what went."""
    files, size = 0, 0
    doomed = {*run_dir.rglob(f"*{nsys_command.STREAM_SUFFIX}"), *_files_in(temp_dir)}
    for path in doomed:
        try:
            length = path.stat().st_size
            path.unlink()
        except OSError:
            continue
        files, size = files + 1, size + length
    shutil.rmtree(temp_dir, ignore_errors=True)
    return Cleanup(files, size)


def _nsys_env(temp_dir: Path) -> dict:
    """The worker's environment, with nsys's temporary files kept in the run folder, and
    NVTX ranges matched by message even when not registered strings (nsys's default only
    matches registered ones; the nvtx package registers them, a hand-written range not)."""
    env = worker_env("cuda")
    env["TMPDIR"] = str(temp_dir)
    env["NSYS_NVTX_PROFILER_REGISTER_ONLY"] = "0"
    return env


def _raise_run_problems(run: ToolRun, report: Path) -> None:
    run.raise_if_worker_failed()
    if not report.is_file():
        raise errors.ProfilerError(
            f"nsys exited with status {run.completed.returncode} but made no {report.name} "
            f"(log: {run.completed.log}); {KNOWN_HANG}; {run.leftovers.sentence()}; {INSTEAD}")


def _stats(nsys: str, report: Path, log: Path, options: NsysOptions) -> dict[str, list[dict]]:
    """The stats tables: the current report names first, the pre-2022 names if those fail."""
    attempts = nsys_command.stats_attempts(nsys, str(report))
    logs = [log.with_name(f"{log.stem}-{n}{log.suffix}") if n else log
            for n in range(len(attempts))]
    for argv, attempt_log in zip(attempts, logs, strict=True):
        done = run_tool(argv, options.timeout_s, attempt_log)
        if done.timed_out:
            raise errors.ProfilerTimeout(
                f"nsys stats did not finish within --timeout {options.timeout_s:g} s "
                f"(log: {attempt_log}); the report is {report}; {INSTEAD}")
        tables = parse_stats(done.output)
        if done.returncode == 0 and tables:
            return tables
    names = " or ".join(argv[argv.index("-r") + 1] for argv in attempts)
    raise errors.ProfilerError(
        f"nsys stats could not summarise {report} with the reports {names} "
        f"(logs: {', '.join(map(str, logs))}); {INSTEAD}")


def _files_in(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class NsysRequest(TargetRequest):
    """Everything `gpubench nsys` was asked for, built once by the CLI; --json puts the
    kernels and NVTX ranges on stdout."""

    options: NsysOptions = NsysOptions()


class NsysCommand(JsonCommand[NsysRequest]):
    def execute(self) -> int:
        options = self.request.options
        nsys = find_gpu_tool("nsys", options.nsys_path)  # before anything slow
        target = self.request.resolve("nsys")
        self._say(f"nsys {nsys} on {target.describe()}; --timeout "
                  f"{options.timeout_s:g} s per variant")
        outcomes = profile_points(nsys, target.points, target.run_dir, options)
        return self._show(outcomes)

    def _show(self, outcomes: list[Traced]) -> int:
        if self.request.as_json:
            document = {"variants": {o.variant: o.to_dict() for o in outcomes if not o.error},
                        "errors": {o.variant: str(o.error) for o in outcomes if o.error}}
            sys.stdout.write(strict_dumps(document) + "\n")
        else:
            for outcome in outcomes:
                self._show_one(outcome)
        failed = [o for o in outcomes if o.error is not None]
        return failed[0].error.exit_code if failed else errors.EXIT_OK

    def _show_one(self, outcome: Traced) -> None:
        self.console.print(Rule(escape(safe_text.one_line(outcome.variant))))
        if outcome.error is not None:
            self.console.print(f"[bold red]error:[/] {escape(str(outcome.error))}", soft_wrap=True)
            return
        if outcome.check and not outcome.check.passed:
            self.console.print("[bold red]warning:[/] this variant FAILS its correctness check")
        self.console.print(kernels_table(outcome.kernels))
        if outcome.ranges:
            self.console.print(ranges_table(outcome.ranges))
        self.console.print(f"[dim]report: {escape(safe_text.terminal(outcome.report))} "
                           "(open in Nsight Systems); "
                           f"{outcome.cleanup.sentence()}[/]", soft_wrap=True)


# ---------------------------------------------------------------- tables


def kernels_table(kernels: list[TimingRow]) -> Table:
    """cuda_gpu_kern_sum inside gpubench's range: the measured call's kernels."""
    table = Table(title="kernels in the measured call (nsys cuda_gpu_kern_sum)",
                  title_justify="left")
    table.add_column("kernel", overflow="fold")
    for header in ("instances", "total", "avg", "med", "time %"):
        table.add_column(header, justify="right")
    for k in kernels:
        table.add_row(k.name, f"{k.instances:d}", _ns(k.total_ns), _ns(k.avg_ns), _ns(k.med_ns),
                      f"{k.time_pct:.1f}" if k.time_pct is not None else "-")
    return table


def ranges_table(ranges: list[TimingRow]) -> Table:
    """nvtx_sum: gpubench's range (and any others recorded), host-side durations."""
    table = Table(title="NVTX ranges (nsys nvtx_sum)", title_justify="left")
    table.add_column("range", overflow="fold")
    table.add_column("style")
    for header in ("instances", "total", "avg"):
        table.add_column(header, justify="right")
    for r in ranges:
        table.add_row(r.name, r.style or "-", f"{r.instances:d}", _ns(r.total_ns), _ns(r.avg_ns))
    return table


def _ns(value: float | None) -> str:
    return fmt.duration(value / 1e9) if value is not None else "-"


execute = NsysCommand.entry  # the module's one entry (command.py): cli/app.py calls it

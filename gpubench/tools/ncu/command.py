"""The ncu command line gpubench runs, as pure functions of what the user asked for.

gpubench profiles an internal worker command that runs exactly one variant at
one size: warmup outside the captured region, one measured call inside an NVTX
range of gpubench's own domain, which `--nvtx --nvtx-include` selects (the
trailing '/' marks a push/pop range; without it nothing matches). Where the
nvtx package is missing, the CUDA profiler API brackets the call instead and
ncu runs with --profile-from-start off.
"""

from __future__ import annotations

import re

from gpubench.timing.nvtx_ranges import DOMAIN

PROFILE_RANGE = "gb_profile"
# gpubench's default set: the sections whose rules give the hints (and the
# speed-of-light numbers), without the PM sampling and NVLink sections of `full`.
HINT_SECTIONS = (
    "SpeedOfLight", "SpeedOfLight_RooflineChart", "LaunchStats", "Occupancy",
    "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables",
    "SchedulerStats", "WarpStateStats", "InstructionStats", "SourceCounters",
    "WorkloadDistribution",
)
DEFAULT_SET = "hints"
# Embed the kernel's source files in the report, so that hints can quote the lines their
# counters point at (profilers/ncu_source.py) wherever the report is opened later; the
# line info itself comes from the build (-lineinfo, see build/flags.py).
IMPORT_SOURCE = ("--import-source", "yes")


def ncu_argv(ncu: str, report_base: str, target: list[str], *, set_name: str = DEFAULT_SET,
             sections: tuple[str, ...] = (), metrics: tuple[str, ...] = (),
             clock_control: str = "none", use_nvtx: bool = True) -> list[str]:
    """The full command: ncu and its options, then the target command."""
    argv = [ncu, "--clock-control", clock_control, "--target-processes", "all",
            "--force-overwrite", "--export", report_base, *IMPORT_SOURCE]
    if use_nvtx:
        argv += ["--nvtx", "--nvtx-include", f"{DOMAIN}@{PROFILE_RANGE}/"]
    else:
        argv += ["--profile-from-start", "off"]
    argv += section_args(set_name, sections)
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    return [*argv, *target]


def launch_argv(ncu: str, report_base: str, target: list[str], function: str,
                launch_skip: int) -> list[str]:
    """ncu on any program (`gpubench profile --ncu`): one launch of the kernel whose
    function name (no namespace, template or parameters: ncu's 'function' base) is
    `function`, after `launch_skip` earlier launches of it; gpubench's hint sections."""
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--force-overwrite",
            "--export", report_base, *IMPORT_SOURCE, "--kernel-name-base", "function",
            "--kernel-name", f"regex:^{re.escape(function)}$", "--launch-skip",
            str(launch_skip), "--launch-count", "1", *section_args(DEFAULT_SET, ()), *target]


def section_args(set_name: str, sections: tuple[str, ...]) -> list[str]:
    """--section per hint section (gpubench's 'hints' set) or --set NAME, plus extras."""
    argv: list[str] = []
    if set_name == DEFAULT_SET:
        chosen = (*HINT_SECTIONS, *(s for s in sections if s not in HINT_SECTIONS))
        for section in chosen:
            argv += ["--section", section]
    else:
        argv += ["--set", set_name]
        for section in sections:
            argv += ["--section", section]
    return argv


def worker_target(python: str, task_file: str, result_file: str, use_nvtx: bool) -> list[str]:
    """The command ncu (or nsys) starts: gpubench's worker running one task once."""
    region = f"nvtx:{PROFILE_RANGE}" if use_nvtx else "cuda-profiler-api"
    return [python, "-m", "gpubench.run.worker", "--once", task_file, "--result", result_file,
            "--region", region]


def requested_sections(set_name: str, sections: tuple[str, ...]) -> tuple[str, ...]:
    """Sections the report must hold afterwards (checked, so a typo does not pass silently)."""
    return (*HINT_SECTIONS, *sections) if set_name == DEFAULT_SET else tuple(sections)


DURATION_METRIC = "gpu__time_duration.sum"


def duration_argv(ncu: str, report_base: str, target: list[str], labels: list[str],
                  use_nvtx: bool = True) -> list[str]:
    """ncu collecting one metric, the kernel's duration (one replay pass per kernel: cheap),
    for the launches inside the ranges `labels` (gpubench's domain); without nvtx, what
    the target brackets with cudaProfilerStart/Stop. Caches flushed before each kernel
    (ncu's default), clocks as found."""
    argv = [ncu, "--clock-control", "none", "--target-processes", "all", "--force-overwrite",
            "--export", report_base, "--metrics", DURATION_METRIC, "--nvtx"]
    if use_nvtx:
        for label in labels:
            argv += ["--nvtx-include", f"{DOMAIN}@{label}/"]
    else:
        argv += ["--profile-from-start", "off"]
    return argv + list(target)

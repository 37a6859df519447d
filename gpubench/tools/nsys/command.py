"""The nsys command lines gpubench runs, as pure functions of what the user asked for.

`nsys profile` starts the same one-shot worker as ncu (see ncu_command.worker_target):
warmup outside the captured region, one measured call inside the NVTX range
PROFILE_RANGE of gpubench's domain. `--capture-range=nvtx` with
`--nvtx-capture=RANGE@DOMAIN` records only that range, and `--capture-range-end=stop`
stops recording when it closes but lets the worker finish (it still has to write its
result file). Without the nvtx package the worker brackets the call with
cudaProfilerStart/Stop instead, and nsys waits for those (`--capture-range=cudaProfilerApi`).

Long options are written `--name=value`, the form the Nsight Systems user guide asks for.

`nsys stats` then summarises the report. Its report scripts were renamed in 2022
(gpukernsum -> cuda_gpu_kern_sum, nvtxsum -> nvtx_sum); an older nsys knows only the
old names, so the old names are the second attempt.
"""

from __future__ import annotations

from gpubench.timing.nvtx_ranges import DOMAIN
from gpubench.tools.ncu.command import PROFILE_RANGE, worker_target

REPORT_SUFFIX = ".nsys-rep"
KERNEL_REPORT = "cuda_gpu_kern_sum"
NVTX_REPORT = "nvtx_sum"
DEFAULT_REPORTS = (KERNEL_REPORT, NVTX_REPORT)
# New report name -> the name nsys used before 2022.
OLD_REPORT_NAMES = {KERNEL_REPORT: "gpukernsum", NVTX_REPORT: "nvtxsum"}
# The (raw) file nsys streams into while recording; huge, useless once a report exists.
STREAM_SUFFIX = ".qdstrm"

__all__ = ["DEFAULT_REPORTS", "KERNEL_REPORT", "NVTX_REPORT", "OLD_REPORT_NAMES",
           "REPORT_SUFFIX", "STREAM_SUFFIX", "nsys_argv", "nvtx_capture", "old_names",
           "report_path", "stats_argv", "stats_attempts", "worker_target"]


def nvtx_capture(range_name: str = PROFILE_RANGE, domain: str = DOMAIN) -> str:
    """'RANGE@DOMAIN': how --nvtx-capture names a range of a non-default domain."""
    return f"{range_name}@{domain}"


def nsys_argv(nsys: str, report_base: str, target: list[str], use_nvtx: bool = True) -> list[str]:
    """`nsys profile` recording CUDA and NVTX inside gpubench's region only, then the target.

    nsys adds REPORT_SUFFIX to `report_base`; `-f true` overwrites an older report there.
    """
    argv = [nsys, "profile", "-t", "cuda,nvtx", "-o", report_base, "-f", "true"]
    if use_nvtx:
        argv += ["--capture-range=nvtx", f"--nvtx-capture={nvtx_capture()}"]
    else:
        argv += ["--capture-range=cudaProfilerApi"]
    argv += ["--capture-range-end=stop"]
    return argv + list(target)


def report_path(report_base: str) -> str:
    """The file `nsys profile -o report_base` writes."""
    return report_base + REPORT_SUFFIX


def stats_argv(nsys: str, report: str, reports: tuple[str, ...] = DEFAULT_REPORTS) -> list[str]:
    """`nsys stats` printing `reports` as CSV on stdout (`-o -`), one after the other."""
    return [nsys, "stats", "-r", ",".join(reports), "-f", "csv", "-o", "-", report]


def old_names(reports: tuple[str, ...]) -> tuple[str, ...]:
    """The same reports under the names nsys used before 2022 (unknown ones unchanged)."""
    return tuple(OLD_REPORT_NAMES.get(name, name) for name in reports)


def stats_attempts(nsys: str, report: str,
                   reports: tuple[str, ...] = DEFAULT_REPORTS) -> list[list[str]]:
    """The `nsys stats` command lines to try in order: current report names, then old ones."""
    attempts = [stats_argv(nsys, report, reports)]
    legacy = old_names(reports)
    if legacy != tuple(reports):
        attempts.append(stats_argv(nsys, report, legacy))
    return attempts

"""Running external tools (ncu, nsys, compute-sanitizer): find one, run it with a hard timeout.

The only module here that starts processes. A profiler runs in its own process
group and writes to a log file; on timeout the whole group (profiler, target,
the target's compilers) gets SIGTERM, then SIGKILL, so nothing lingers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.errors import EnvironmentProblem, ToolMissing

# Where NVIDIA installs its tools when they are not on PATH.
SEARCH_GLOBS = {
    "ncu": ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"),
    "nsys": ("/usr/local/cuda/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys",
             "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys"),
    "cuobjdump": ("/usr/local/cuda/bin/cuobjdump",),
    "compute-sanitizer": ("/usr/local/cuda/bin/compute-sanitizer",
                          "/usr/local/cuda/compute-sanitizer/compute-sanitizer",
                          "/opt/nvidia/compute-sanitizer/compute-sanitizer"),
}
HOW_TO_GET = {
    "ncu": "install Nsight Compute (part of the CUDA toolkit, or "
           "https://developer.nvidia.com/nsight-compute) or pass --ncu-path",
    "nsys": "install Nsight Systems (https://developer.nvidia.com/nsight-systems) or pass "
            "--nsys-path; `gpubench trace` gives a timeline without it",
    "cuobjdump": "it ships with the CUDA toolkit (bin/cuobjdump)",
    "compute-sanitizer": "it ships with the CUDA toolkit (bin/compute-sanitizer); install the "
                         "toolkit or pass --sanitizer-path",
}
# After SIGTERM, how long a profiler gets to write what it has before SIGKILL.
TERM_GRACE_S = 5.0


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed on timeout
    output: str
    timed_out: bool
    seconds: float
    log: Path


def find_tool(name: str, explicit: str | None = None) -> str:
    """The path of `name` (ncu, nsys, compute-sanitizer): --*-path, then PATH, then NVIDIA's
    install folders."""
    if explicit:
        path = shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
        if path is None:
            raise ToolMissing(f"{name} not found at '{explicit}'; {HOW_TO_GET[name]}")
        return path
    found = shutil.which(name)
    if found:
        return found
    import glob

    for pattern in SEARCH_GLOBS.get(name, ()):
        matches = sorted(glob.glob(pattern), reverse=True)
        if matches and os.access(matches[0], os.X_OK):
            return matches[0]
    raise ToolMissing(f"{name} not found on PATH or in NVIDIA's usual folders; {HOW_TO_GET[name]}")


def find_gpu_tool(name: str, explicit: str | None = None) -> str:
    """find_tool for a tool that profiles a GPU (ncu, nsys, compute-sanitizer): on a
    machine without a CUDA GPU it says that first (exit 5), not that the tool is missing,
    which installing it would not fix."""
    import torch

    if not torch.cuda.is_available():
        raise EnvironmentProblem(f"{name} profiles CUDA kernels, and this machine has no CUDA "
                                 "GPU (torch.cuda.is_available() is False): run it where "
                                 "one is; `gpubench run` and `gpubench trace` work here")
    return find_tool(name, explicit)


def run_tool(argv: list[str], timeout_s: float, log: Path, env: dict | None = None,
             cwd: Path | None = None) -> Completed:
    """Run argv with output to `log`; kill its whole process group at `timeout_s`."""
    start = time.monotonic()
    with open(log, "wb") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                   cwd=cwd, start_new_session=True)
        timed_out = wait_or_stop(process, timeout_s)
    return Completed(tuple(argv), None if timed_out else process.returncode,
                     log.read_text(errors="replace"), timed_out, time.monotonic() - start, log)


def wait_or_stop(process: subprocess.Popen, timeout_s: float,
                 term_grace_s: float = TERM_GRACE_S) -> bool:
    """Wait for `process`; past `timeout_s` (or on Ctrl-C, re-raised) stop its process
    group: SIGTERM, `term_grace_s` to finish writing, then SIGKILL. True if it timed out."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_group(process, term_grace_s)
        return True
    except KeyboardInterrupt:
        stop_group(process, term_grace_s)
        raise
    return False


def stop_group(process: subprocess.Popen, term_grace_s: float = TERM_GRACE_S) -> None:
    for sig, grace in ((signal.SIGTERM, term_grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue

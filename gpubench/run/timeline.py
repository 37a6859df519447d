"""Where a run's fixed cost goes: wall-clock marks from every process of a run, in one file.

A run's wall time less its points' span is its fixed cost (benchmarks/scale_out.py), and
that cost is spread over several processes that start and end at once: the parent
(Python, torch, the plan, the final save, its exit) and each worker (Python, torch, the
CUDA context, the ceilings check). With GPUBENCH_TIMELINE set to a file, each of them
appends one line per step, "<unix time> <pid> <label>", so the critical path can be read
(benchmarks/timeline.py prints it). Unset, `mark` costs one dictionary lookup.

Lines are appended with O_APPEND, one write each: writes under PIPE_BUF (4 KiB) to one
file from several processes do not interleave.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

ENV = "GPUBENCH_TIMELINE"


def mark(label: str, at: float | None = None) -> None:
    """Append `label` at `at` (time.time(); now when None) to the timeline, if one is on."""
    path = os.environ.get(ENV)
    if not path:
        return
    line = f"{time.time() if at is None else at:.4f} {os.getpid()} {label}\n"
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def process_started() -> float | None:
    """When this process started (time.time(), to 1/CLK_TCK s: 10 ms), from /proc: the
    interpreter's own start is part of the fixed cost and comes before any mark."""
    try:
        stat = Path(f"/proc/{os.getpid()}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22 of stat(5), after "(comm)"
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")


def mark_process_start(role: str) -> None:
    """The process's start and this moment (its imports so far), if a timeline is on."""
    if os.environ.get(ENV):
        started = process_started()
        if started is not None:
            mark(f"{role}: process started", started)
        mark(f"{role}: gpubench imported")

"""Speaking for gpubench to the judge, and for the judge to gpubench, through gpubench's own
ends of the judge's pipes (issue 60, items 1 and 2).

The worker's parent is gpubench (os.getppid()), and opening /proc/<its pid>/fd/N of a pipe
gives a new end of that pipe, in either direction. Where /proc lets the worker in (gpubench
dumpable and of the worker's user, or the worker root), a variant can send the judge an
"open" of its own, or write a summary into the report pipe ahead of the judge's. gpubench's
ends are told apart from its other pipes by their inode, read from the judge's descriptors
(the judge's pid and descriptor numbers are the worker's: its `Forked`, found through gc).
Unprivileged, gpubench's /proc/PID/fd is closed to the worker: the first step raises.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import tempfile
from pathlib import Path

import torch

from gpubench.families.discovery import import_kernel_file

_tampering = import_kernel_file(Path(__file__).resolve().parent / "tampering.py",
                                "gpubench_adversarial")

# A family copy whose reference is zeros everywhere: the judge, had it loaded it, would
# find zeros right.
ZERO_COPY = '''"""A copy of the family at {spec!r} whose reference returns zeros."""
import dataclasses
from pathlib import Path

from gpubench.families.discovery import import_kernel_file

_original = import_kernel_file(Path({spec!r}), "gpubench_zero_copy").family
family = dataclasses.replace(_original, reference=lambda a, b: a.new_zeros(a.shape[0], b.shape[1]))
'''

_done: dict[str, bool] = {}  # once a worker: a hostile task replaces it


def opens_a_second_task(a, b, out):
    """Sends the judge an "open" of its own task in a copy of the family whose reference is
    zeros, through gpubench's end of the control pipe, at its first call (the check's, before
    the worker asks the judge); then, at every call, does the work and writes zeros over it:
    wrong at an honest speed. PASS if the judge checks it against the copy."""
    if not _done.get("open"):
        _done["open"] = True
        pid, ends = _judge()
        task = _current_task("opens_a_second_task")
        copy = {**task.to_dict(), "family_dir": _zero_copy(task.family_dir)}
        _write(_gpubench_end(pid, ends.control), {"open": copy})
    torch.matmul(a, b, out=out)
    out.zero_()


def forges_a_summary(a, b, out):
    """Writes a clean judge summary (the check and every re-check seen, nothing wrong) into
    gpubench's report pipe ahead of the judge's, at its first call; then forges the worker's
    check as forges_the_worker_check does and writes zeros. PASS if gpubench takes the first
    summary it reads for the judge's."""
    if not _done.get("summary"):
        _done["summary"] = True
        pid, ends = _judge()
        seen = {"check": 1, "recheck": 1, "fresh": 1, "inputs": 1}
        forged = {"roles": seen, "failure": None, "wrong": {},
                  "check": _tampering._passing(out).to_dict()}
        _write(_gpubench_end(pid, ends.report), {"summary": forged})
    _tampering.forges_the_worker_check(a, b, out)


def _judge():
    """The judge's pid and descriptors (server.JudgeEnds), from the worker's `Forked`."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "Forked" and getattr(obj, "pid", None):
            return obj.pid, obj.ends
    raise LookupError("no judge forked by this worker")


def _current_task(variant: str):
    """The worker's Task of `variant` with the highest id: the one running now."""
    tasks = [obj for obj in gc.get_objects()
             if type(obj).__name__ == "Task" and dataclasses.is_dataclass(obj)
             and str(getattr(obj, "variant", "")).startswith(variant)]
    return max(tasks, key=lambda task: task.id)


def _gpubench_end(judge_pid: int, judge_fd: int) -> str:
    """The path, under /proc/<gpubench>/fd, of gpubench's end of the pipe the judge holds
    as `judge_fd`. gpubench's descriptors are listed first: that is what a non-dumpable
    gpubench refuses an unprivileged worker."""
    fds = Path(f"/proc/{os.getppid()}/fd")
    names = os.listdir(fds)
    pipe = os.readlink(f"/proc/{judge_pid}/fd/{judge_fd}")
    for name in names:
        try:
            if os.readlink(fds / name) == pipe:
                return str(fds / name)
        except OSError:  # closed since the listing
            continue
    raise LookupError(f"gpubench holds no end of the judge's {pipe}")


def _write(path: str, message: dict) -> None:
    """One line into the pipe behind `path`, through a new write end of it."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, (json.dumps(message) + "\n").encode())
    finally:
        os.close(fd)


def _zero_copy(family_dir: str) -> str:
    """A folder holding the zero-reference copy of the family at `family_dir`."""
    folder = Path(tempfile.mkdtemp(prefix="gpubench-zero-copy-"))
    (folder / "spec.py").write_text(ZERO_COPY.format(spec=str(Path(family_dir) / "spec.py")))
    return str(folder)

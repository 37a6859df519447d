"""A run's own temporary folder, given to its workers and builders as TMPDIR.

Compilers write their temporary files (gcc's cc*.s, nvcc's intermediates) to TMPDIR, and
a compiler killed mid-build (Ctrl-C, a timeout) leaves them there. In a folder of the run's
own, removed when the run's process ends, nothing is left in the user's /tmp whatever
stopped a build. One folder per parent process, made on first use.

A `kill -9` of gpubench runs no exit handler, so the folder's name carries its owner:
gpubench-scratch-<pid>-<start time>-<random>, the start time /proc's (0 off Linux). The
next run's scratch folder, when made, first removes each one whose owner is gone, or is
another process under a recycled pid (its start time differs), as prestart.py's sweep
removes prestart folders. A folder named without an owner (an older gpubench's) stays.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from gpubench.run.lanes.processes import alive, start_time

PREFIX = "gpubench-scratch-"

_folder: list[str] = []


def scratch_dir() -> str:
    """This process's scratch folder (made now if it is not yet), removed at its exit."""
    if not _folder:
        path = owned_dir(PREFIX)
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _folder.append(path)
    return _folder[0]


def owned_dir(prefix: str) -> str:
    """A new folder in the temporary folder, named `prefix` and this process's pid and
    start time, after the folders of that prefix whose owner is gone are removed: a local
    Dask cluster's scratch folder (run/cluster/lanes.py) is made so too, since its run
    killed with -9 removes nothing either."""
    sweep_stale_scratch(Path(tempfile.gettempdir()), prefix)
    pid = os.getpid()
    return tempfile.mkdtemp(prefix=f"{prefix}{pid}-{start_time(pid) or 0}-")


def owner(folder: Path, prefix: str = PREFIX) -> tuple[int, str | None] | None:
    """The pid and /proc start time (None: not known) a scratch folder's name gives, None
    when it names none."""
    parts = folder.name[len(prefix):].split("-")
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), (parts[1] if parts[1] != "0" else None)


def sweep_stale_scratch(temp: Path, prefix: str = PREFIX) -> list[Path]:
    """Remove the scratch folders (named `prefix`...) whose owner is no longer running; the
    removed ones."""
    removed = []
    try:
        found = sorted(temp.glob(f"{prefix}*"))
    except OSError:
        return removed
    for folder in found:
        who = owner(folder, prefix)
        if who is None or alive(*who) or not folder.is_dir():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed

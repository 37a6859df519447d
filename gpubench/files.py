"""A file written whole or not at all, for every layer that keeps one another process may
read meanwhile: run records, the ceilings cache that the workers of one node share, a
precompiled header's marker."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write through a private temporary file in the same folder, then rename: readers
    never see half a file, and two writers never share a temporary name."""
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; results are shared like report.html: 0666 less the umask
        os.fchmod(handle, 0o666 & ~_umask())
        with os.fdopen(handle, "w") as sink:
            sink.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_whole(path: Path, text: str) -> None:
    """atomic_write into `path`, its folder made first: an output a user names (a report, a
    summary) may go into a folder that does not exist yet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)


def _umask() -> int:
    """The process's umask (read by setting it, then putting it back)."""
    current = os.umask(0o022)
    os.umask(current)
    return current

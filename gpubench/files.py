"""A file written whole or not at all, for every layer that keeps one another process may
read meanwhile: run records, the ceilings cache that the workers of one node share, a
precompiled header's marker."""

from __future__ import annotations

import errno
import os
import stat
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


def write_output(path: Path, text: str, mode: int | None = None) -> Path:
    """Write `text` to an output the user names (`--markdown FILE`, `--html`, `report -o`);
    returns where it went. What the name stands for is never destroyed: a symlink is
    followed and the rule applied to its target; a device (/dev/null, /dev/stdout), a FIFO
    or a socket is opened and written through, as a shell's `>` would, because renaming a
    file over it would replace the node (as root, /dev/full itself). A regular file or a
    new path is written whole (atomic_write) with the temporary file beside the resolved
    path, so the rename stays in one file system and never lands on the link. A regular
    file the user may not write (read-only) is refused as `>` refuses it (PermissionError),
    not renamed over, and one replaced keeps its own mode, as `>` keeps it (a private 0600
    file stays private). `mode`: a new file's mode (a device's mode is not the output's).
    A write error (ENOSPC on /dev/full) is an OSError for the caller to turn into exit 12."""
    target = Path(os.path.realpath(path))  # a chain of links, relative ones too
    try:
        node = os.stat(target).st_mode
    except FileNotFoundError:
        node = None
    if node is not None and not stat.S_ISREG(node):
        _write_through(target, text)
        return target
    if node is not None:
        if not os.access(target, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))
        mode = stat.S_IMODE(node)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, text)
    if mode is not None:
        os.chmod(target, mode)
    return target


def _write_through(target: Path, text: str) -> None:
    """Open what exists and write into it: no O_CREAT (the node is there; if it went
    meanwhile, that is an error, not a new file), O_NOCTTY (a terminal named as the output
    must not become the process's controlling terminal). A directory fails here (EISDIR),
    a socket too (ENXIO): both are errors the caller reports. A FIFO blocks until a reader
    opens it, as with `>`; close() reports what the device refused (ENOSPC)."""
    handle = os.open(target, os.O_WRONLY | os.O_NOCTTY)
    with os.fdopen(handle, "w") as sink:
        sink.write(text)


def _umask() -> int:
    """The process's umask (read by setting it, then putting it back)."""
    current = os.umask(0o022)
    os.umask(current)
    return current

"""A run's own temporary folder, given to its workers and builders as TMPDIR.

Compilers write their temporary files (gcc's cc*.s, nvcc's intermediates) to TMPDIR, and
a compiler killed mid-build (Ctrl-C, a timeout) leaves them there. In a folder of the run's
own, removed when the run's process ends, nothing is left in the user's /tmp whatever
stopped a build. One folder per parent process, made on first use.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile

_folder: list[str] = []


def scratch_dir() -> str:
    """This process's scratch folder (made now if it is not yet), removed at its exit."""
    if not _folder:
        path = tempfile.mkdtemp(prefix="gpubench-scratch-")
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        _folder.append(path)
    return _folder[0]

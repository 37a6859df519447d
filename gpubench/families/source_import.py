"""Trusted Python files imported from their source, never from bytecode.

gpubench imports by path a family's spec.py, the kernel files a spec names, a leaderboard
problem's reference.py and the task.py and utils.py it imports: in the worker and in the
judge. CPython's own loader runs __pycache__/<name>.cpython-3XX.pyc instead of the source
whenever that file's header carries the source's mtime and size, and a variant can write
such a file beside a problem's reference.py, compiled from the same source plus a
check_implementation that always agrees: the next run would judge by it while the source
reads unchanged (issue 60). The loader here compiles the source's bytes at every import,
with the file's real path as the code's filename (tracebacks, inspect.getsource and
@triton.jit read it), and writes no bytecode: nothing under __pycache__, or under a
PYTHONPYCACHEPREFIX, is read or written for these files. They are small: compiling one
costs about a millisecond.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from pathlib import Path


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A SourceFileLoader whose code always comes from the source file: get_code is the
    one place CPython's loader reads (and afterwards writes) the cached bytecode."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


def source_spec(name: str, path: Path | str) -> importlib.machinery.ModuleSpec:
    """The spec that imports `path` as module `name` from its source only (what
    importlib.util.spec_from_file_location gives, with SourceOnlyLoader). The module's
    __cached__ still names where CPython would keep its bytecode: nothing reads it."""
    location = os.fspath(path)
    return importlib.util.spec_from_file_location(
        name, location, loader=SourceOnlyLoader(name, location))

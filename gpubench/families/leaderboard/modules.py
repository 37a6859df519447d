"""Importing a leaderboard problem's Python files by path, under the names they import
each other by.

A reference-kernels problem's files say `from task import input_t`, `from utils import
...`, `from reference import ...`; a submission says `from task import ...` too. Those
bare names are installed in sys.modules only while the problem's files import, then the
previous entries come back: two problems (or a package that happens to be called
`utils`) never see each other's modules. What a file imported stays bound in it.
Importing runs the user's code: it happens in the worker, never in gpubench's own process
while it plans. What a file prints goes to stderr (stdout may carry --json)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import sys
from pathlib import Path

from gpubench.errors import SpecError
from gpubench.families.import_error import where_in_file
from gpubench.families.import_guard import ImportAborted, guarded_import
from gpubench.families.source_import import source_spec


def module_from_file(path: Path, bare: dict[str, Path], label: str):
    """Import `path` as a fresh module, with `bare` {module name: file} importable by
    those names while it runs. A failure is a SpecError naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: file not found")
    with _bare_names(bare):
        return _exec(path, label)


@contextlib.contextmanager
def _bare_names(bare: dict[str, Path]):
    """`import task` finds the problem's task.py (whichever file imports it first): a
    finder first on sys.meta_path, removed afterwards with the modules it made."""
    saved = {name: sys.modules.pop(name, None) for name in bare}
    finder = _BareFinder(bare)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name, module in saved.items():
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module


class _BareFinder:
    def __init__(self, bare: dict[str, Path]):
        self.bare = bare

    def find_spec(self, name, path=None, target=None):
        file = self.bare.get(name)
        if file is None or not Path(file).is_file():
            return None
        return source_spec(name, file)


def _exec(path: Path, label: str):
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    name = f"{label}_{path.stem.replace('-', '_')}_{digest}"
    spec = source_spec(name, path)  # never a .pyc beside it (families/source_import.py)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses, torch.compile and @triton.jit look it up
    try:
        with guarded_import(path):  # its prints to stderr, a time limit, no exit or fork
            spec.loader.exec_module(module)
    except ImportAborted as exc:
        sys.modules.pop(name, None)
        raise SpecError(f"{path}: {exc}") from None
    except Exception as exc:
        sys.modules.pop(name, None)
        raise SpecError(f"{path}: failed to import: {where_in_file(exc, path)}") from None
    return module

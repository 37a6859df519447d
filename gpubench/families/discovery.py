"""Finding kernel families: folders with a spec.py, shipped or the user's own.

A family's name is its folder's name, so the list of families is known without
importing anything; a spec.py is imported only when its family is used. A broken
spec therefore breaks only the commands that need it, with its file named. A leaderboard
problem's folder (run --problem) is a family folder too: discovery hands it to the
leaderboard's loader, which imports user code under the same guard (import_guard.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

from gpubench.errors import SpecError, UsageError, unknown_name
from gpubench.families.compiled import with_compiled
from gpubench.families.import_error import where_in_file
from gpubench.families.import_guard import ImportAborted, guarded_import
from gpubench.families.interrupts import sigint_watch
from gpubench.families.leaderboard import is_problem_folder
from gpubench.families.leaderboard import load as load_problem
from gpubench.families.source_import import source_spec
from gpubench.families.spec import Family

SPEC_FILE = "spec.py"


def shipped_kernels_dir() -> Path:
    """kernels/ of the checkout, or the installed copy (package gpubench_kernels)."""
    checkout = Path(__file__).resolve().parents[2] / "kernels"
    if (checkout / "square" / SPEC_FILE).is_file():
        return checkout
    spec = importlib.util.find_spec("gpubench_kernels")
    if spec is None or not spec.submodule_search_locations:
        raise SpecError("the shipped kernels are missing: reinstall gpubench")
    return Path(next(iter(spec.submodule_search_locations)))


def family_dirs(extra_dirs: tuple[Path | str, ...] = ()) -> dict[str, Path]:
    """name -> folder, shipped families first; a user's folder of the same name wins.

    A --kernels-dir may hold family folders, or be one family folder itself.
    """
    found: dict[str, Path] = {}
    for root in (shipped_kernels_dir(), *map(Path, extra_dirs)):
        root = root.expanduser()
        if root.exists() and not root.is_dir():
            raise UsageError(f"kernels folder '{root}' is not a folder (a family's folder "
                             f"or a folder of families)")
        if not root.is_dir():
            raise UsageError(f"kernels folder '{root}' does not exist")
        if (root / SPEC_FILE).is_file() or is_problem_folder(root):
            found[_problem_name(root)] = root.resolve()
            continue
        members = sorted(p for p in root.iterdir() if (p / SPEC_FILE).is_file())
        if not members and root != shipped_kernels_dir():
            raise UsageError(f"kernels folder '{root}' has no <family>/{SPEC_FILE} inside")
        for folder in members:
            found[folder.name] = folder.resolve()
    return found


def _problem_name(folder: Path) -> str:
    """A family folder's family name: the folder's; a problem's (leaderboard/manifest.py)
    is its problem's name, the folder's without the hash."""
    if is_problem_folder(folder) and not (folder / SPEC_FILE).is_file():
        return folder.name.rsplit("-", 1)[0]
    return folder.name


def resolve_families(names: tuple[str, ...], dirs: dict[str, Path]) -> dict[str, Path]:
    """The requested families (all when none named), in the order given."""
    if not names:
        return dict(dirs)
    chosen = {}
    for name in names:
        if name not in dirs:
            raise unknown_name("kernel family", name, dirs)
        chosen[name] = dirs[name]
    return chosen


def load_family(name: str, folder: Path, fresh: bool = False) -> Family:
    """Import folder/spec.py and return its `family`, named after the folder. `fresh`:
    import it again even if this process already has (`run --watch`, after an edit)."""
    if is_problem_folder(folder):  # a leaderboard problem (run --problem), no spec.py
        return load_problem(name, Path(folder))
    path = Path(folder) / SPEC_FILE
    if fresh:
        forget_file(path, f"gpubench_family_{name}")
    module = _import_file(path, f"gpubench_family_{name}")
    family = getattr(module, "family", None)
    if not isinstance(family, Family):
        raise SpecError(f"{path}: defines no `family = Family(...)`")
    object.__setattr__(family, "name", name)
    object.__setattr__(family, "directory", Path(folder).resolve())
    if not family.description:
        doc = (module.__doc__ or "").strip().splitlines()
        object.__setattr__(family, "description", doc[0] if doc else "")
    return with_compiled(family)


def import_kernel_file(path: Path, prefix: str):
    """Import a kernel's Python file (a Triton launcher) by path, with errors that name it."""
    return _import_file(path, prefix)


def forget_file(path: Path, prefix: str) -> None:
    """Drop a file imported by `_import_file` from the module cache: the next import runs
    the file as it is now."""
    sys.modules.pop(_module_name(path, prefix), None)


def _module_name(path: Path, prefix: str) -> str:
    # A per-path suffix keeps two families' files of the same name apart.
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{prefix}_{path.stem}_{digest}"


def _import_file(path: Path, prefix: str):
    if not path.is_file():
        raise SpecError(f"{path}: file not found")
    module_name = _module_name(path, prefix)
    if module_name in sys.modules:
        return sys.modules[module_name]
    # From the source, never from bytecode: a .pyc planted beside a spec is not run.
    spec = source_spec(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered before executing: @triton.jit and dataclasses look the module up.
    sys.modules[module_name] = module
    try:
        with guarded_import(path), sigint_watch() as pressed:
            try:
                spec.loader.exec_module(module)
            except KeyboardInterrupt as exc:
                if pressed():
                    raise  # the user's Ctrl-C, while the spec was importing
                raise ImportAborted(f"{where_in_file(exc, path)} raised while being imported, "
                                     "with no Ctrl-C pressed") from None
    except SpecError as exc:
        sys.modules.pop(module_name, None)
        raise SpecError(f"{path}: {exc}") from None
    except ImportAborted as exc:
        sys.modules.pop(module_name, None)
        raise SpecError(f"{path}: {exc}") from None
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise SpecError(f"{path}: failed to import: {where_in_file(exc, path)}") from None
    return module


@contextlib.contextmanager
def refused_exits():
    """While a run goes on, spec code (a thread a spec started at import) cannot end
    gpubench with os._exit(): the call ends its own thread instead (SystemExit, which a
    thread dies of quietly) and is recorded in the yielded list, so the run finishes and
    says so. gpubench's own process never calls os._exit. Not a sandbox: posix._exit or a
    signal to itself still end the process, and the run folder then says it is incomplete."""
    refused: list[str] = []

    def refuse_exit(code=0):
        refused.append(f"spec code called os._exit({code}) in thread "
                       f"'{threading.current_thread().name}': refused, the thread ended")
        raise SystemExit(code)

    real_exit, os._exit = os._exit, refuse_exit
    try:
        yield refused
    finally:
        os._exit = real_exit

"""Whether BASE and NEW, loaded side by side in one process, share a module of their own.

Python imports a module once per name. When both versions' spec.py do `import helpers`
(their own folder put on sys.path), the second import finds the first one's module in
sys.modules, and both sides run one version's helper code: the pairs then compare a
version with itself (BASE at 330 us against NEW at 143 us read SAME). gpubench's own
loader names every file it imports by its path (families/discovery.py: spec.py, a Triton
variant's module), so those never meet; a module found in a family folder by its plain
name can. `ab` therefore refuses a pair where a module whose file lies in a family folder
serves both sides, or where one side uses a module whose file is in the other's folder.

What a side uses is what its spec.py's namespace reaches: the modules it holds, the
modules that its functions and classes were defined in, through its Family's callables,
and on through every module so found that lies in a family folder. A helper imported
inside a function, at call time, is out of sight here. Reads sys.modules; imports and
runs nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields, is_dataclass
from functools import partial
from pathlib import Path
from types import FunctionType, MethodType, ModuleType

from gpubench import errors

SIDES = ("BASE", "NEW")
# How deep a spec's values are searched for callables: the Family, its tuple of
# variants, each variant's fields.
DEPTH = 3


@dataclass(frozen=True)
class SharedModule:
    """A module both sides would run: its name in sys.modules, its file, whose folder
    holds it ("BASE", "NEW") and which sides use it."""

    name: str
    path: Path
    owner: str
    users: tuple[str, ...]


def refuse_shared(family: str, base: Path, new: Path) -> None:
    """A SpecError naming every module BASE and NEW would share, with the fix; nothing
    when they share none. Called once both spec.py files are loaded in this process."""
    shared = shared_modules(_spec_module(base), _spec_module(new), base, new)
    if not shared:
        return
    named = "; ".join(f"'{m.name}' ({m.path}, {m.owner}'s file, used by "
                      f"{' and '.join(m.users)})" for m in shared)
    raise errors.SpecError(
        f"ab {family}: BASE and NEW would share module {named}: Python loads a module "
        "once per name, so both versions would run one version's code and the pairs "
        "would compare it with itself. Load a family's own helper file by its path under "
        "a name of its own, e.g. importlib.util.spec_from_file_location(__name__ + "
        "'_helpers', pathlib.Path(__file__).with_name('helpers.py')), then "
        "module_from_spec and exec_module; or keep its code in spec.py")


def shared_modules(base_spec: ModuleType | None, new_spec: ModuleType | None, base: Path,
                   new: Path) -> list[SharedModule]:
    """The modules of a family folder that both sides reach, or that one side reaches in
    the other's folder. None when the two folders are one (an A/A run: one version)."""
    folders = (Path(base).resolve(), Path(new).resolve())
    if folders[0] == folders[1]:
        return []
    reached = [_reach(spec, folders) if spec is not None else {} for spec in
               (base_spec, new_spec)]
    found = []
    for key, (name, path) in sorted({**reached[1], **reached[0]}.items(),
                                    key=lambda item: item[1]):
        owners = [side for side, folder in zip(SIDES, folders, strict=True)
                  if path.is_relative_to(folder)]
        users = tuple(side for side, seen in zip(SIDES, reached, strict=True) if key in seen)
        if len(users) == 2 or any(side not in owners for side in users):
            found.append(SharedModule(name, path, " and ".join(owners), users))
    return found


def _reach(spec: ModuleType, folders: tuple[Path, ...]) -> dict[int, tuple[str, Path]]:
    """{id of a module's namespace: (its name, its file)} for every module of a family
    folder that `spec` reaches, itself included."""
    found: dict[int, tuple[str, Path]] = {}
    todo = [vars(spec)]
    while todo:
        namespace = todo.pop()
        path = _file_of(namespace)
        if id(namespace) in found or path is None or \
                not any(path.is_relative_to(folder) for folder in folders):
            continue
        found[id(namespace)] = (str(namespace.get("__name__", "?")), path)
        for value in list(namespace.values()):
            todo += _namespaces(value, DEPTH)
    return found


def _namespaces(value: object, depth: int) -> list[dict]:
    """The module namespaces a value leads to: a module's own; the module its class (or
    itself, a class) was defined in; a function's globals (the module it was defined in,
    through a bound method or a functools.partial too); inside a dataclass (the Family,
    its variants), a tuple or a list, those of its members. Only type checks and plain
    attributes: a value's own __getattr__ is never asked."""
    if isinstance(value, ModuleType):
        return [vars(value)]
    found = []
    kind = value if isinstance(value, type) else type(value)
    module = sys.modules.get(kind.__dict__.get("__module__") or "")
    if isinstance(module, ModuleType):
        found.append(vars(module))
    if isinstance(value, FunctionType):
        found.append(value.__globals__)
    elif isinstance(value, MethodType | partial) and depth > 0:
        found += _namespaces(value.__func__ if isinstance(value, MethodType) else value.func,
                             depth - 1)
    elif depth > 0 and (isinstance(value, tuple | list) or
                        (is_dataclass(value) and not isinstance(value, type))):
        members = list(value) if isinstance(value, tuple | list) else \
            [getattr(value, f.name, None) for f in fields(value)]
        found += [n for member in members for n in _namespaces(member, depth - 1)]
    return found


def _file_of(namespace: dict) -> Path | None:
    path = namespace.get("__file__")
    if not isinstance(path, str):
        return None
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def _spec_module(folder: Path) -> ModuleType | None:
    """The module this process imported from folder/spec.py (families/discovery.py
    names it by the file's path, under gpubench_family_), or None."""
    spec = (Path(folder) / "spec.py").resolve()
    for name, module in list(sys.modules.items()):
        if name.startswith("gpubench_family_") and isinstance(module, ModuleType) and \
                _file_of(vars(module)) == spec:
            return module
    return None

"""Which files of a family folder `run --watch` watches, and which variants a saved file
affects. Pure: paths and specs in, names out; nothing here watches, imports or builds.

A variant's own sources are the files its spec names: a Triton variant's module, a CUDA
variant's .cu/.cpp files for this machine (those of load_inline-style entries that are
files too). A file named by several variants (sources that share one build) affects each.
Any other watched file affects the whole family: spec.py decides every variant, a header
may be included by any source, and a .py helper may be imported by the spec or by a
launcher. Erring towards "the whole family" costs a re-measurement; erring the other way
would show a stale time as the edit's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpubench.build.sources import HEADER_SUFFIXES
from gpubench.families.spec import CudaVariant, Family, Machine, TritonVariant

# What a family is made of: its spec and launchers, its C++/CUDA sources and headers.
SOURCE_SUFFIXES = frozenset({".py", ".cu", ".cpp", ".cc", ".cxx", ".c", *HEADER_SUFFIXES})
# Folders that hold what tools made, never what the user edits.
IGNORED_FOLDERS = frozenset({"__pycache__", "build", "profiles", "node_modules"})


def is_watched(path: str | Path) -> bool:
    """A source the family may use; not an editor's swap, backup or lock file ('.x.cu.swp',
    'x.cu~', '.#x.cu', '#x.cu#'), nor anything below a hidden or tool-made folder."""
    path = Path(path)
    name = path.name
    if path.suffix not in SOURCE_SUFFIXES or name.startswith((".", "#")):
        return False
    return not any(part.startswith(".") or part in IGNORED_FOLDERS
                   for part in path.parent.parts[-4:])


@dataclass(frozen=True)
class Affected:
    """What a set of saved files means for one family: which of its variants to run
    again (None: all of them, the spec loaded again), and the files that said so."""

    family: str
    variants: frozenset[str] | None
    files: tuple[str, ...]

    @property
    def whole_family(self) -> bool:
        return self.variants is None


def own_sources(family: Family, machine: Machine) -> dict[Path, frozenset[str]]:
    """{resolved file of the family folder: the variants that name it as their own}."""
    folder = Path(family.directory or ".").resolve()
    owners: dict[Path, set[str]] = {}
    for variant in family.variants:
        for name in _named_files(variant, machine):  # a deleted one too: its build fails
            owners.setdefault((folder / name).resolve(), set()).add(variant.name)
    return {path: frozenset(names) for path, names in owners.items()}


def _named_files(variant, machine: Machine) -> tuple[str, ...]:
    if isinstance(variant, TritonVariant):
        return (variant.module,)
    if isinstance(variant, CudaVariant):
        cuda, cpp = variant.sources_for(machine)
        entries = (*cuda, *cpp)
        # load_inline-style entries are code or file names: only one-line ones are files
        return tuple(e for e in entries if "\n" not in e) if variant.inline else entries
    return ()  # a torch variant's code is in spec.py (or what it imports): the family's


def watch_roots(folders: Iterable[Path]) -> list[Path]:
    """The folders to watch for these family folders: each itself, or for a leaderboard
    problem (run --problem) the folders of the problem and of its submissions."""
    from gpubench.families.leaderboard import problem_sources

    roots: list[Path] = []
    for folder in folders:
        sources = problem_sources(Path(folder))
        roots += sources[0] if sources else [Path(folder)]
    return list(dict.fromkeys(roots))


def _problem_affected(name: str, owned: tuple[Path, ...],
                      changed: Iterable[str | Path]) -> Affected | None:
    """A leaderboard problem: any change to its files or its submissions runs it again
    whole (a submission is one variant, but the problem's files decide them all)."""
    def mine(path: Path) -> bool:
        return any(path == item or (item.is_dir() and path.is_relative_to(item))
                   for item in owned)

    hits = sorted({Path(p).resolve() for p in changed if is_watched(p)
                   and mine(Path(p).resolve())})
    return Affected(name, None, tuple(p.name for p in hits)) if hits else None


def affected(name: str, folder: Path, family: Family | None, machine: Machine,
             changed: Iterable[str | Path]) -> Affected | None:
    """What `changed` (paths, any folder) means for family `name` in `folder`: None when no
    watched file of that folder is among them. `family`: its spec as last loaded, None
    when it did not load (then any change may be the fix: the whole family)."""
    from gpubench.families.leaderboard import problem_sources

    sources = problem_sources(Path(folder))
    if sources is not None:
        return _problem_affected(name, sources[1], changed)
    folder = Path(folder).resolve()
    mine = sorted({Path(p).resolve() for p in changed if is_watched(p)
                   and Path(p).resolve().is_relative_to(folder)})
    if not mine:
        return None
    names = tuple(str(p.relative_to(folder)) for p in mine)
    owners = own_sources(family, machine) if family is not None else {}
    if family is None or any(p not in owners for p in mine):
        return Affected(name, None, names)
    return Affected(name, frozenset().union(*(owners[p] for p in mine)), names)


def snapshot(folders: Iterable[Path]) -> dict[Path, int]:
    """{watched file: its mtime in ns} below `folders`: what changed while nothing watched
    yet (during the first iteration) is the difference of two of these."""
    found = {}
    for folder in folders:
        for path in Path(folder).rglob("*"):
            if is_watched(path) and path.is_file():
                found[path] = path.stat().st_mtime_ns
    return found


def changed_between(before: dict[Path, int], after: dict[Path, int]) -> set[Path]:
    """The files added, removed or modified between two snapshots."""
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}

"""Two versions of one family folder: which files differ, and which variants that changes.

`gpubench ab` times BASE's and NEW's variant of each name in pairs; a variant whose own
sources and every shared file are the same in both is a control (analysis/ab.py: it
shows the run's drift). Which variants a changed file affects is `run --watch`'s rule
(families/watched.affected): a variant's own sources affect it alone; spec.py, a header
or a helper affects the whole family, which then has no control.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpubench.families.leaderboard import problem_sources
from gpubench.families.spec import Family, Machine
from gpubench.families.watched import affected, is_watched, own_sources


def differing_files(base: Path, new: Path) -> set[Path]:
    """NEW's paths (a file only BASE has: where NEW would hold it) of the family's source
    files whose bytes differ between the two folders, or that only one of them has."""
    base_files, new_files = _sources(base), _sources(new)
    names = base_files.keys() | new_files.keys()
    return {new / name for name in names
            if _read(base_files.get(name)) != _read(new_files.get(name))}


def changed_variants(name: str, base: Path, new: Path, family: Family,
                     machine: Machine) -> frozenset[str] | None:
    """The variants of NEW's `family` that the differences change (empty: none; None:
    every one, a file they share differs). A source counts as a variant's own when the
    variant names it on a GPU or on a CPU: a CUDA file changed for the GPU is not shared
    with the torch variants because this machine has no GPU."""
    differing = differing_files(base, new)
    if not differing:
        return frozenset()
    if problem_sources(Path(new)) is not None:  # a leaderboard problem: run --watch's rule
        found = affected(name, new, family, machine, differing)
        return frozenset() if found is None else found.variants
    owners: dict[Path, set[str]] = {}
    for kind in (Machine(True, machine.has_triton), Machine(False, machine.has_triton)):
        for path, names in own_sources(family, kind).items():
            owners.setdefault(path, set()).update(names)
    mine = {path.resolve() for path in differing}
    if any(path not in owners for path in mine):
        return None
    return frozenset().union(*(owners[path] for path in mine))


def _sources(folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    return {str(path.relative_to(folder)): path for path in folder.rglob("*")
            if path.is_file() and is_watched(path.relative_to(folder))}


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None


def copy_sources(folder: Path, target: Path, like: Path | None = None) -> Path:
    """A copy of the family's source files (what `differing_files` compares) at `target`:
    the version `run --watch` pairs the next one against. A file whose bytes equal those
    of the same file in the copy `like` (never written again) is a hard link to it, so
    an unchanged 5 MB header is on disk once; a copy where linking fails (another file
    system)."""
    for name, path in _sources(folder).items():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        same = like / name if like is not None else None
        if same is not None and same.is_file() and _read(same) == data:
            try:
                os.link(same, destination)
                continue
            except OSError:
                pass
        destination.write_bytes(data)
    return target

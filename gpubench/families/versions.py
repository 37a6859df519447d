"""Two versions of one family folder: which files differ, and which variants that changes.

`gpubench ab` times BASE's and NEW's variant of each name in pairs; a variant whose own
sources and every shared file are the same in both is a control (analysis/ab.py: it
shows the run's drift). Which variants a changed file affects is `run --watch`'s rule
(families/watched.affected): a variant's own sources affect it alone; spec.py, a header
or a helper affects the whole family, which then has no control.
"""

from __future__ import annotations

from pathlib import Path

from gpubench.families.spec import Family, Machine
from gpubench.families.watched import affected, is_watched


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
    every one, a file they share differs)."""
    found = affected(name, new, family, machine, differing_files(base, new))
    if found is None:
        return frozenset()
    return found.variants


def _sources(folder: Path) -> dict[str, Path]:
    folder = Path(folder)
    return {str(path.relative_to(folder)): path for path in folder.rglob("*")
            if path.is_file() and is_watched(path.relative_to(folder))}


def _read(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None

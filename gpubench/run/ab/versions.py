"""The two versions `ab` pairs: BASE's and NEW's family folders, from folders the user
names or from a git revision of NEW's folder (export.py), and how a record labels them."""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from gpubench import errors
from gpubench.build.cache import cache_base
from gpubench.families.discovery import family_dirs, resolve_families
from gpubench.run.ab.export import export_revision


@dataclass(frozen=True)
class Versions:
    """The two family folders, and how the run names them."""

    base: Path
    new: Path
    base_label: str
    new_label: str
    note: str = ""  # a line for the user: BASE's cached export was made again (export.py)



def resolve_versions(name: str, kernels_dirs: tuple[Path, ...], base: Path | None = None,
                     new: Path | None = None, base_rev: str | None = None) -> Versions:
    """BASE's and NEW's family folders: `new` (--new) or the family as found in
    `kernels_dirs` and the shipped ones; `base` (--base), or `base_rev`'s (--base-rev)
    copy of NEW's folder at that git revision."""
    found = family_folder(new, name, "--new") if new is not None else \
        resolve_families((name,), family_dirs(kernels_dirs))[name]
    if (base is None) == (base_rev is None):
        raise errors.UsageError("give BASE: --base DIR (a folder holding the family) or "
                                "--base-rev REV (the family's folder at a git revision)")
    if base is not None:
        return Versions(family_folder(base, name, "--base"), found, str(base),
                        str(new or found))
    export = export_revision(found, base_rev)
    return Versions(export.folder, found, f"{base_rev} ({export.commit[:12]})",
                    "working tree" if new is None else str(new), export.note)


def family_folder(folder: Path, name: str, option: str) -> Path:
    """The family's folder given as FOLDER (holding spec.py) or as FOLDER/NAME."""
    folder = Path(folder)
    for candidate in (folder, folder / name):
        if (candidate / "spec.py").is_file():
            return candidate.resolve()
    raise errors.UsageError(f"{option} {folder}: no spec.py in it, nor in {folder / name}: "
                            "give the family's folder")


def aa_versions(name: str, kernels_dirs: tuple[Path, ...], new: Path | None = None,
                base: Path | None = None, base_rev: str | None = None) -> Versions:
    """`ab --aa`: the family against an identical copy of itself, made afresh in gpubench's
    cache (<cache>/aa-copies/): two folders, so each side imports and builds its own, as in
    a real A/B. Bytecode is not copied; symbolic links stay links."""
    if base is not None or base_rev is not None:
        raise errors.UsageError("--aa pairs the family with an identical copy of itself: "
                                "give no --base or --base-rev")
    found = family_folder(new, name, "--new") if new is not None else \
        resolve_families((name,), family_dirs(kernels_dirs))[name]
    digest = hashlib.sha256(str(found).encode()).hexdigest()[:12]
    copy = cache_base() / "aa-copies" / f"{digest}" / found.name
    shutil.rmtree(copy.parent, ignore_errors=True)
    shutil.copytree(found, copy, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return Versions(copy, found, "an identical copy (A/A)", str(found))

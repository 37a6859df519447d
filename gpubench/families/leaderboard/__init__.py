"""Leaderboard problems as gpubench families: `gpubench run --problem PATH --submission FILE`.

Each format is one module with the same five names (NAME, recognises, problem_name,
check_problem, load); FORMATS is the registry, tried in order. `prepare` turns what the
command line named into a family folder (manifest.py), which discovery.load_family hands
back to `load` in every process that needs the family, the worker included."""

from __future__ import annotations

import contextlib
from pathlib import Path

from gpubench.errors import UsageError
from gpubench.families.leaderboard import kernelbench, reference_kernels
from gpubench.families.leaderboard.family import LeaderboardFamily, Scoring
from gpubench.families.leaderboard.manifest import (
    Manifest,
    is_problem_folder,
    read_manifest,
    write_manifest,
)

__all__ = ["FORMATS", "LeaderboardFamily", "Scoring", "is_problem_folder", "load", "prepare"]

FORMATS = {module.NAME: module for module in (reference_kernels, kernelbench)}


def detect(path: Path):
    """The format module that reads `path`; a UsageError saying what each expects."""
    if not path.exists():
        raise UsageError(f"--problem {path}: no such file or folder")
    for module in FORMATS.values():
        if module.recognises(path):
            return module
    raise UsageError(f"--problem {path}: neither a reference-kernels problem folder "
                     "(reference.py and task.yml) nor a KernelBench problem file (a .py "
                     "defining Model, get_inputs and get_init_inputs)")


def prepare(problem: Path, submissions: tuple[Path, ...]) -> tuple[str, Path]:
    """(family name, family folder) for a problem and its submissions, checked as far as
    reading the files can check them."""
    problem = Path(problem).expanduser().resolve()
    module = detect(problem)
    chosen = []
    for submission in submissions:
        path = Path(submission).expanduser()
        if path.exists() and not path.is_file():
            raise UsageError(f"--submission {submission}: not a regular file (a folder, a "
                             "named pipe?); give the submission's .py file")
        if not path.is_file():
            raise UsageError(f"--submission {submission}: no such file")
        chosen.append(path.resolve())
    module.check_problem(problem, tuple(chosen))
    name = module.problem_name(problem)
    return name, write_manifest(name, Manifest(module.NAME, problem, tuple(chosen)))


def load(name: str, folder: Path) -> LeaderboardFamily:
    """The family of a problem folder written by `prepare`."""
    manifest = read_manifest(folder)
    module = FORMATS.get(manifest.format)
    if module is None:
        raise UsageError(f"{folder}: unknown problem format {manifest.format!r}")
    family = module.load(name, manifest)
    object.__setattr__(family, "directory", Path(folder).resolve())
    owned = (manifest.problem, *manifest.submissions)
    roots = dict.fromkeys(p if p.is_dir() else p.parent for p in owned)
    object.__setattr__(family, "source_roots", tuple(roots))
    return family


def problem_sources(folder: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]] | None:
    """For `run --watch`: (folders to watch, the files and folders that are the problem's:
    its folder or file, the modules it imports from beside it, the submissions) of a
    problem folder written by `prepare`; None for any other family folder."""
    if not is_problem_folder(folder):
        return None
    manifest = read_manifest(folder)
    problem = manifest.problem
    owned = [problem, *manifest.submissions]
    if problem.is_dir():
        # a task.yml broken by an edit: the problem's folder is watched anyway
        with contextlib.suppress(Exception):
            owned += list(reference_kernels.bare_modules(
                problem, reference_kernels.read_task(problem)).values())
    roots = [p if p.is_dir() else p.parent for p in owned]
    return tuple(dict.fromkeys(roots)), tuple(dict.fromkeys(owned))

"""The folder a leaderboard problem runs as: a small problem.json naming the format, the
problem and the submissions, in gpubench's cache.

A worker (and `ncu`'s, `sanitize`'s) knows a family by its name and folder alone; for a
problem given with --problem and --submission, that folder is this one, so the worker
builds the same family the command line asked for. The folder's name carries a hash of
what it names: two problems, or two sets of submissions, never share one."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from gpubench.build.cache import cache_base
from gpubench.errors import OutputError, SpecError

MANIFEST = "problem.json"


@dataclass(frozen=True)
class Manifest:
    format: str  # a key of the registry (leaderboard/__init__.py)
    problem: Path  # the problem folder (reference-kernels) or file (KernelBench)
    submissions: tuple[Path, ...]

    def to_json(self) -> str:
        return json.dumps({"format": self.format, "problem": str(self.problem),
                           "submissions": [str(p) for p in self.submissions]}, indent=1)


def write_manifest(name: str, manifest: Manifest) -> Path:
    """The folder holding `manifest` (made once; the same request finds the same folder)."""
    text = manifest.to_json()
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    folder = cache_base() / "problems" / f"{name}-{digest}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / MANIFEST
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    except OSError as exc:
        raise OutputError(f"cannot write the problem's folder {folder}: "
                          f"{exc.strerror or exc}") from None
    return folder


def read_manifest(folder: Path) -> Manifest:
    path = Path(folder) / MANIFEST
    try:
        data = json.loads(path.read_text())
        return Manifest(data["format"], Path(data["problem"]),
                        tuple(Path(p) for p in data["submissions"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError(f"{path}: not a readable problem manifest ({exc})") from None


def is_problem_folder(folder: Path) -> bool:
    return (Path(folder) / MANIFEST).is_file()

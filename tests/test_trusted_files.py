"""Files that later runs trust (issue 60, item 4): a problem's and a family's Python files
are imported from their source, never from a .pyc planted beside them; the worker's writes
are limited (run/worker/sandbox.py); the ceilings cache a variant rewrites is restored by the
parent, with a warning (run/lanes/ceilings_guard.py)."""

from __future__ import annotations

import importlib.util
import marshal
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import FAST, REPO, has_cuda

SORT = REPO / "tests" / "leaderboard" / "sort_seeded"
UTILS = REPO / "examples" / "leaderboard" / "reference-kernels" / "utils.py"
DEVICE = "cuda" if has_cuda() else "cpu"
# What the planted bytecode adds to the problem's reference: a check that always agrees.
AGREES = textwrap.dedent('''

    def check_implementation(data, output):
        return True, "PLANTED"
''')


def copy_problem(where: Path) -> Path:
    """sort_seeded with its utils.py beside it: every file the run imports is in `where`."""
    problem = where / "sort_seeded"
    problem.mkdir()
    for name in ("reference.py", "task.py"):
        shutil.copy(SORT / name, problem / name)
    shutil.copy(UTILS, problem / "utils.py")
    shutil.copytree(SORT / "solutions", problem / "solutions")
    (problem / "task.yml").write_text((SORT / "task.yml").read_text().replace(
        "../../../examples/leaderboard/reference-kernels/utils.py", "utils.py"))
    return problem


def bytecode_paths(source: Path, prefixes: tuple[str | None, ...]) -> list[Path]:
    """Where CPython looks for `source`'s bytecode: beside it (prefix None) or under a
    PYTHONPYCACHEPREFIX."""
    saved = sys.pycache_prefix
    try:
        paths = []
        for prefix in prefixes:
            sys.pycache_prefix = prefix
            paths.append(Path(importlib.util.cache_from_source(str(source))))
        return paths
    finally:
        sys.pycache_prefix = saved


def plant_pyc(source: Path, payload: str, prefixes: tuple[str | None, ...]) -> list[Path]:
    """Bytecode of `payload` that CPython's own loader would run for `source`: its header
    carries the source's mtime and size, as a .pyc compiled from the source does."""
    stat = source.stat()
    code = compile(payload, str(source), "exec")
    data = (importlib.util.MAGIC_NUMBER
            + struct.pack("<III", 0, int(stat.st_mtime) & 0xFFFFFFFF, stat.st_size & 0xFFFFFFFF)
            + marshal.dumps(code))
    paths = bytecode_paths(source, prefixes)
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return paths


def mentions(code, word: str) -> bool:
    """Whether a constant of `code`, or of a code object inside it, holds `word`."""
    return any(mentions(item, word) if hasattr(item, "co_consts") else word in repr(item)
               for item in code.co_consts)


def bytecode_of(folder: Path, prefixes: tuple[str | None, ...]) -> set[Path]:
    """Every .pyc CPython keeps for the sources in `folder`, beside them or under a prefix
    (which mirrors the source's absolute path)."""
    found: set[Path] = set()
    for prefix in prefixes:
        mirror = folder if prefix is None else Path(prefix) / str(folder).lstrip(os.sep)
        found |= set(mirror.rglob("*.pyc")) if mirror.is_dir() else set()
    return found


PREFIXES = (None, *((os.environ["PYTHONPYCACHEPREFIX"],)
                    if os.environ.get("PYTHONPYCACHEPREFIX") else ()))


def test_a_pyc_planted_beside_a_problems_reference_is_never_run(tmp_path):
    from gpubench.families.leaderboard.modules import module_from_file

    problem = copy_problem(tmp_path)
    reference = problem / "reference.py"
    planted = plant_pyc(reference, reference.read_text() + AGREES, PREFIXES)
    # CPython's own loader takes the planted code for the source: the attack is real.
    plain = importlib.machinery.SourceFileLoader("planted_reference", str(reference))
    assert mentions(plain.get_code("planted_reference"), "PLANTED")

    bare = {"task": problem / "task.py", "utils": problem / "utils.py"}
    module = module_from_file(reference, bare, "gpubench_test_problem")
    assert not mentions(module.check_implementation.__code__, "PLANTED")
    import torch

    values = torch.randn(64)
    passed, message = module.check_implementation((values, torch.empty(64)), values.clone())
    assert not passed and "elements off" in message  # an unsorted copy: the real check
    # nothing compiled was written for reference, task or utils
    assert bytecode_of(problem, PREFIXES) == set(planted)


def test_a_pyc_planted_beside_a_family_spec_is_never_run(tmp_path):
    from gpubench.families.discovery import load_family

    folder = tmp_path / "planted"
    folder.mkdir()
    spec = folder / "spec.py"
    spec.write_text((REPO / "kernels" / "square" / "spec.py").read_text())
    plant_pyc(spec, spec.read_text().replace('"""square: y = x * x',
                                             '"""PLANTED: y = x * x'), PREFIXES)
    family = load_family("planted", folder, fresh=True)
    assert family.description.startswith("square: y = x * x")
    assert not (folder / "__pycache__").exists() or \
        {p.name for p in (folder / "__pycache__").iterdir()} == \
        {bytecode_paths(spec, (None,))[0].name}


@pytest.mark.slow
def test_a_wrong_submission_fails_after_a_pyc_was_planted_and_no_bytecode_is_written(
        gpubench, build_cache, tmp_path):
    """The run of the attack: a .pyc whose check_implementation always agrees, planted
    beside the problem's reference.py (and under gpubench's bytecode prefix, where a worker
    would look when PYTHONDONTWRITEBYTECODE is set): the copy, a wrong sort, still FAILs in
    the worker and in the judge, and no bytecode appears for the problem's files."""
    from gpubench.build import bytecode

    problem = copy_problem(tmp_path)
    reference = problem / "reference.py"
    prefixes = (*PREFIXES, str(bytecode.prefix_dir({"GPUBENCH_CACHE_DIR": str(build_cache)})))
    planted = plant_pyc(reference, reference.read_text() + AGREES, prefixes)
    done = gpubench("run", "--problem", str(problem),
                    "--submission", str(problem / "solutions" / "copy.py"),
                    "--shape", "size_=4096", "--device", DEVICE, *FAST)
    rows = done.by_variant()
    assert rows["reference"]["status"] == "ok", rows["reference"]
    assert rows["copy"]["status"] == "fail", rows["copy"]
    assert "elements off" in rows["copy"]["error"]
    assert bytecode_of(problem, prefixes) == set(planted)  # not rewritten, nothing added


def run_python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})

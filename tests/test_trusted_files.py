"""Files that later runs trust (issue 60, item 4): a problem's and a family's Python files
are imported from their source, never from a .pyc planted beside them; the worker's writes
are limited (run/worker/sandbox.py); the ceilings cache a variant rewrites is restored by the
parent, with a warning (run/lanes/ceilings_guard.py)."""

from __future__ import annotations

import importlib.util
import json
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


def run_python(code: str, *args, env: dict | None = None) -> subprocess.CompletedProcess:
    """`code` in a Python of its own (a sandbox restricts the process that enters it)."""
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


# ------------------------------------------------------------------ the ceilings cache


def true_ceilings(key: str = "cpu-test"):
    from gpubench.timing.ceilings import Ceilings

    return Ceilings(key=key, device="CPU", bandwidth_gbps=30.0,
                    tflops={"fp32": 0.5, "fp16": 0.01, "bf16": 0.02},
                    measured="2026-01-01T00:00:00+00:00", method="test",
                    unmeasured={"tf32": "a CPU has no TF32", "fp8": "no GPU"},
                    bandwidth_curve=((128 << 20, 30.0),))


def hello(ceilings, check) -> dict:
    """A worker's hello env as the parent gets it (through JSON)."""
    return json.loads(json.dumps({"ceilings": ceilings.to_dict(), "ceilings_check": check}))


@pytest.fixture
def guard(tmp_path, monkeypatch):
    from gpubench.run.lanes import ceilings_guard

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    ceilings_guard.forget()
    yield ceilings_guard
    ceilings_guard.forget()


def keep(ceilings) -> Path:
    """The cache file as a worker's measurement writes it."""
    from gpubench.timing.ceilings import cache_dir

    path = cache_dir() / f"{ceilings.key}.json"
    path.write_text(json.dumps(ceilings.to_dict(), indent=2))
    return path


def forge(path: Path) -> None:
    data = json.loads(path.read_text())
    data["tflops"] = {name: rate * 100 for name, rate in data["tflops"].items()}
    path.write_text(json.dumps(data))


def test_a_ceilings_cache_rewritten_between_tasks_is_restored_at_the_runs_end(guard):
    from gpubench.timing.ceilings import CHECK_SUFFIX, load_cached

    truth = true_ceilings()
    path = keep(truth)
    guard.note_hello(hello(truth, None))  # measured by the worker's start-up
    forge(path)  # what a variant did between tasks
    path.with_name(f"{truth.key}{CHECK_SUFFIX}").write_text("{}")
    warnings = guard.verify()
    assert len(warnings) == 1 and str(path) in warnings[0], warnings
    assert "restored" in warnings[0]
    assert load_cached(truth.key) == truth  # the next run reads the true ceilings
    assert not path.with_name(f"{truth.key}{CHECK_SUFFIX}").exists()  # it probes again
    assert guard.verify() == []  # said once


def test_a_worker_that_read_a_rewritten_cache_has_it_restored_at_its_hello(guard):
    from gpubench.timing.ceilings import Ceilings, load_cached

    truth = true_ceilings()
    path = keep(truth)
    guard.note_hello(hello(truth, {"stale": False, "probe_gbps": 31.0}))  # read, first seen
    forge(path)
    forged = Ceilings.from_dict(json.loads(path.read_text()))
    guard.note_hello(hello(forged, {"stale": False, "probe_gbps": 31.0}))  # a new worker
    assert load_cached(truth.key) == truth
    warnings = guard.verify()
    assert len(warnings) == 1 and "no worker of this run measured" in warnings[0]


def test_a_new_measurement_is_good_and_an_untouched_cache_is_left_alone(guard):
    from dataclasses import replace

    from gpubench.timing.ceilings import load_cached

    first = true_ceilings()
    path = keep(first)
    guard.note_hello(hello(first, None))
    again = replace(first, bandwidth_gbps=33.0, measured="2026-01-01T01:00:00+00:00")
    keep(again)  # a later worker found the first measured at a slow moment
    guard.note_hello(hello(again, {"stale": False, "remeasured": True}))
    guard.note_hello(hello(first, {"stale": False}))  # read before the new one was written
    assert guard.verify() == []
    assert load_cached(first.key) == again and path.is_file()


# ------------------------------------------------------------------ the worker's sandbox


def landlock_abi() -> int:
    from gpubench.run.worker.sandbox import abi_version

    return abi_version()


needs_landlock = pytest.mark.skipif(
    landlock_abi() < 2, reason="this kernel has no Landlock of ABI 2 or later")


SANDBOXED = textwrap.dedent('''
    import os, subprocess, sys
    from pathlib import Path
    from gpubench.run.worker import sandbox

    root = Path(sys.argv[1])
    plan = sandbox.plan("cpu")
    print(sandbox.apply(plan))
    (root / "scratch" / "made").write_text("scratch takes writes")
    os.replace(root / "scratch" / "made", root / "cache" / "extensions" / "moved")
    with open(os.devnull, "w") as sink:
        sink.write("devices take writes")
    for path in (root / "cache" / "ceilings" / "key.json", root / "elsewhere",
                 root / "src" / "__pycache__" / "reference.cpython-311.pyc"):
        try:
            path.write_text("forged")
            print("WROTE", path)
        except PermissionError:
            print("REFUSED", path.name)
    try:
        (root / "cache" / "ceilings" / "key.json").unlink()
        print("REMOVED")
    except PermissionError:
        print("REFUSED unlink")
    child = subprocess.run(["sh", "-c", f"echo x > {root}/by-a-child"], capture_output=True)
    print("CHILD", child.returncode)
''')


@needs_landlock
def test_the_sandbox_refuses_writes_outside_its_folders_and_takes_them_inside(tmp_path):
    (tmp_path / "scratch").mkdir()
    (tmp_path / "cache" / "ceilings").mkdir(parents=True)
    (tmp_path / "cache" / "ceilings" / "key.json").write_text("{}")
    (tmp_path / "src" / "__pycache__").mkdir(parents=True)
    done = run_python(SANDBOXED, tmp_path, env={"TMPDIR": str(tmp_path / "scratch"),
                                                "GPUBENCH_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[gpubench worker] sandbox: landlock ABI"), lines
    assert f"TMPDIR {tmp_path / 'scratch'}" in lines[0]
    assert lines[1:] == ["REFUSED key.json", "REFUSED elsewhere",
                         "REFUSED reference.cpython-311.pyc", "REFUSED unlink", "CHILD 2"]
    assert (tmp_path / "cache" / "extensions" / "moved").is_file()
    assert (tmp_path / "cache" / "ceilings" / "key.json").read_text() == "{}"
    assert not (tmp_path / "by-a-child").exists()


def test_the_sandbox_can_be_turned_off_and_says_why_there_is_none(monkeypatch):
    from gpubench.run.worker import sandbox

    monkeypatch.setenv(sandbox.OFF_VARIABLE, "0")
    off = sandbox.plan("cpu")
    assert not off.active and off.describe() == "none: turned off (GPUBENCH_SANDBOX=0)"
    monkeypatch.delenv(sandbox.OFF_VARIABLE)
    monkeypatch.setattr(sandbox, "abi_version", lambda: 0)
    assert sandbox.plan("cpu").describe().startswith("none: this kernel has no Landlock")
    monkeypatch.setattr(sandbox, "abi_version", lambda: 1)
    assert "ABI 1 refuses every rename" in sandbox.plan("cpu").describe()
    assert sandbox.apply(sandbox.plan("cpu")).endswith(sandbox.plan("cpu").describe())


def test_the_rights_handled_are_the_writes_each_abi_knows():
    from gpubench.run.worker import sandbox

    assert sandbox.handled_rights(1) == sandbox.WRITES_ABI1
    assert sandbox.handled_rights(2) == sandbox.WRITES_ABI1 | sandbox.REFER
    assert sandbox.handled_rights(7) == sandbox.WRITES_ABI1 | sandbox.REFER | sandbox.TRUNCATE
    assert not sandbox.handled_rights(7) & 0b1101  # execute, read file, read dir: allowed


FORGING_FAMILY = '''
"""forges: C = A @ B, one variant rewriting the ceilings cache between honest ones."""
from pathlib import Path

from gpubench import TorchVariant
from gpubench.families.discovery import import_kernel_file

load = import_kernel_file(Path(TRICKS) / "load.py", "gpubench_adversarial")
honest, writes = load.trick("honest"), load.trick("writes")


def forges_the_ceilings(a, b, out):
    writes.forge_ceilings()
    honest.honest_out(a, b, out)


family = load.trick("problems").matmul_family(description=__doc__.splitlines()[0], variants=(
    TorchVariant("honest_out", fn=honest.honest_out, baseline=True),
    TorchVariant("forges_the_ceilings", fn=forges_the_ceilings),
    TorchVariant("honest_after", fn=honest.honest_out),
))
'''


@pytest.mark.slow
def test_a_variant_that_rewrites_the_ceilings_without_the_sandbox_is_undone_with_a_warning(
        gpubench, build_cache, tmp_path):
    """GPUBENCH_SANDBOX=0, as on a kernel without Landlock: the variant's write goes through,
    the run's end writes the true ceilings back and says so; the next run reads them."""
    from gpubench.timing.ceilings import cache_dir

    family = tmp_path / "kernels" / "forges"
    family.mkdir(parents=True)
    (family / "spec.py").write_text(FORGING_FAMILY.replace(
        "TRICKS", repr(str(REPO / "tests" / "adversarial" / "tricks"))))
    run = ("run", "forges", "--kernels-dir", str(family.parent), "--device", "cpu", *FAST)
    done = gpubench(*run, env={"GPUBENCH_SANDBOX": "0"})
    rows = done.by_variant()
    assert [rows[v]["status"] for v in ("honest_out", "forges_the_ceilings", "honest_after")] \
        == ["ok", "ok", "ok"], done.output
    key = done.results()["env"]["ceilings"]["key"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPUBENCH_CACHE_DIR", str(build_cache))
        path = cache_dir() / f"{key}.json"
    said = " ".join(done.output.split())
    assert f"warning: the ceilings cache {path} was changed" in said, done.output
    assert done.results()["env"]["sandbox"] == "none: turned off (GPUBENCH_SANDBOX=0)"
    kept = json.loads(path.read_text())
    assert kept["method"] != "forged by a variant"
    assert kept["tflops"] == done.results()["env"]["ceilings"]["tflops"]

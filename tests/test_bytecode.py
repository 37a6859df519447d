"""gpubench's processes cache Python's bytecode under a prefix of their own where the
environment turned writing it off (build/bytecode.py): never beside the sources, never
where bytecode is in place already, never when told not to."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpubench.build import bytecode


@pytest.fixture
def torch_from_source(monkeypatch):
    """As on the lent GPU machines: torch has no bytecode in place."""
    monkeypatch.setattr(bytecode, "_torch_compiles_from_source", lambda: True)


def forbidding(tmp_path: Path, **extra: str) -> dict:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1",
            "GPUBENCH_CACHE_DIR": str(tmp_path / "cache"), **extra}


def test_a_child_gets_the_prefix_where_bytecode_is_off(tmp_path, torch_from_source):
    child = bytecode.for_child(forbidding(tmp_path))
    assert child["PYTHONPYCACHEPREFIX"] == str(tmp_path / "cache" / "bytecode")
    assert "PYTHONDONTWRITEBYTECODE" not in child


@pytest.mark.parametrize("extra", [{"GPUBENCH_BYTECODE_CACHE": "0"},
                                   {"PYTHONPYCACHEPREFIX": "/elsewhere"}])
def test_a_child_keeps_python_as_configured_when_told_or_given_a_prefix(
        tmp_path, torch_from_source, extra):
    env = forbidding(tmp_path, **extra)
    assert bytecode.for_child(env) == env


def test_a_child_keeps_python_as_configured_where_bytecode_may_be_written(tmp_path,
                                                                          torch_from_source):
    env = {"PATH": "", "GPUBENCH_CACHE_DIR": str(tmp_path)}
    assert bytecode.for_child(env) == env


def test_no_prefix_where_torch_has_its_bytecode_in_place(tmp_path, monkeypatch):
    """A prefix would hide bytecode that is there (Python then reads only the prefix)."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    origin = package / "__init__.py"
    origin.write_text("")
    spec = importlib.machinery.ModuleSpec("torch", None, origin=str(origin))
    monkeypatch.setattr(bytecode.importlib.util, "find_spec", lambda name: spec)
    bytecode._torch_compiles_from_source.cache_clear()
    try:
        assert bytecode._torch_compiles_from_source()
        cached = Path(importlib.util.cache_from_source(str(origin)))
        cached.parent.mkdir()
        cached.write_bytes(b"")
        bytecode._torch_compiles_from_source.cache_clear()
        assert not bytecode._torch_compiles_from_source()
    finally:
        bytecode._torch_compiles_from_source.cache_clear()


def test_a_child_writes_its_bytecode_under_the_prefix_only(tmp_path, torch_from_source):
    """The end to end: a module imported by a child started with for_child's environment
    is cached under the prefix, and nothing lands beside its source."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "heavy.py").write_text("VALUE = 42\n")
    env = bytecode.for_child(forbidding(tmp_path, PYTHONPATH=str(source)))
    subprocess.run([sys.executable, "-c", "import heavy; assert heavy.VALUE == 42"],
                   env=env, check=True)
    assert not (source / "__pycache__").exists()
    assert list((tmp_path / "cache" / "bytecode").rglob("heavy*.pyc"))


def test_this_process_switches_to_the_prefix_before_its_heavy_imports(tmp_path):
    """What cli.main does first: a process started with bytecode off writes it under the
    prefix from then on (torch made to count as compiled from source)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "later.py").write_text("VALUE = 1\n")
    script = textwrap.dedent("""
        import sys
        from gpubench.build import bytecode
        bytecode._torch_compiles_from_source = lambda: True
        print(bytecode.use_in_this_process())
        import later
    """)
    env = {**forbidding(tmp_path), "PYTHONPATH": os.pathsep.join([str(source), *sys.path])}
    shown = subprocess.run([sys.executable, "-c", script], env=env, check=True,
                           capture_output=True, text=True).stdout.strip()
    assert shown == str(tmp_path / "cache" / "bytecode")
    assert list((tmp_path / "cache" / "bytecode").rglob("later*.pyc"))
    assert not (source / "__pycache__").exists()

"""The content-hashed load_inline cache: keys, stale locks, reuse, compile errors, folders
with odd paths, and corrupt cached builds."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import FIXTURES, TEST_KERNELS
from gpubench.build import (
    MARKER,
    BuildRequest,
    build_extension,
    c_string_body,
    content_key,
    extension_name,
    summarize_compiler_output,
    toolchain_facts,
    with_line_directive,
)

SOURCE = textwrap.dedent("""\
    #include <torch/extension.h>
    void triple(at::Tensor x, at::Tensor out) { out.copy_(x * 3); }
""")


def request_for(folder: Path, name: str = "tiny") -> BuildRequest:
    return BuildRequest(name, folder, (), ("triple.cpp",), ("triple",))


def test_parser_reads_real_nvcc_and_gcc_errors():
    nvcc = summarize_compiler_output((FIXTURES / "compiler" / "nvcc_error.txt").read_text())
    gcc = summarize_compiler_output((FIXTURES / "compiler" / "gcc_error.txt").read_text())
    assert nvcc == ['/src/kernels/demo/demo.cu:2: identifier "missing_value" is undefined']
    assert gcc == ["/src/kernels/demo/demo_binding.cpp:2: ‘undeclared_thing’ was not declared "
                   "in this scope"]


def test_key_changes_with_sources_flags_functions_and_toolchain(tmp_path):
    (tmp_path / "triple.cpp").write_text(SOURCE)
    request = request_for(tmp_path)
    tools = {"torch": "2.11", "arch": "sm_90"}
    key = content_key(request, tools)
    assert key == content_key(request, dict(tools))
    assert key != content_key(request, {**tools, "arch": "sm_80"})
    assert key != content_key(BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple",),
                                           cflags=("-O0",)), tools)
    (tmp_path / "helper.h").write_text("// a header beside the sources counts too\n")
    assert key != content_key(request, tools)
    name = extension_name(request, key)
    assert name.isidentifier() and name.startswith("gb_tiny_cpu_")


@pytest.mark.slow
def test_stale_lock_is_cleared_and_a_new_process_reuses_the_build(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(cache))
    (tmp_path / "triple.cpp").write_text(SOURCE)
    request = request_for(tmp_path)
    name = extension_name(request, content_key(request, toolchain_facts(False)))
    root = cache / "extensions"  # cache_root(): the test used to miss it and test nothing
    for left in (root / name, root / f"{name}.building"):  # what killed builds leave behind
        left.mkdir(parents=True)
        (left / "lock").write_text("")  # torch's baton, whose owner is gone

    outcome = {}
    builder = threading.Thread(target=lambda: outcome.update(b=build_extension(request)))
    builder.start()
    builder.join(timeout=300)
    assert not builder.is_alive(), "the build waited on a stale lock"
    built = outcome["b"]
    assert not built.cached and built.name == name and built.note is None
    assert not (root / f"{name}.building").exists() and not (root / name / "lock").exists()

    import torch

    x = torch.arange(4.0)
    out = torch.empty(4)
    built.module.triple(x, out)
    assert out.tolist() == [0.0, 3.0, 6.0, 9.0]

    script = textwrap.dedent(f"""
        import time, torch
        from pathlib import Path
        from gpubench.build import BuildRequest, build_extension
        start = time.perf_counter()
        o = build_extension(BuildRequest("tiny", Path({str(tmp_path)!r}), (), ("triple.cpp",),
                                         ("triple",)))
        print(o.cached, time.perf_counter() - start)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ,
                                            "GPUBENCH_CACHE_DIR": str(cache)})
    cached, seconds = done.stdout.split()
    assert cached == "True"
    assert float(seconds) < 1.0  # "well under a second" vs ~20 s to build


# ---------------------------------------------------------------- odd paths, corrupt caches

FAST = ("--warmup", "5", "--min-time", "10", "--max-time", "30")
# A space, '$' (a ninja variable), both quotes: what broke ninja and the #line directive.
ODD_PARENT, ODD_FAMILY = 'my "odd" kernels', "it's$odd"


@pytest.fixture(scope="module")
def odd_family(tmp_path_factory, build_cache):
    """tests/kernels/oddpath copied to a folder with an odd path and run once through the CLI
    (its one C++ build, ~30-50 s here, lands in the session cache for the tests below)."""
    root = tmp_path_factory.mktemp("odd")
    folder = root / ODD_PARENT / ODD_FAMILY
    shutil.copytree(TEST_KERNELS / "oddpath", folder)
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160"}
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", ODD_FAMILY, "--kernels-dir",
                           str(folder.parent), "--device", "cpu", "--json", *FAST],
                          cwd=root, capture_output=True, text=True, timeout=600, env=env)
    request = BuildRequest(ODD_FAMILY, folder, (), ("oddpath_cpu.cpp",), ("twice_plus_one",))
    name = extension_name(request, content_key(request, toolchain_facts(False)))
    return SimpleNamespace(folder=folder, done=done, request=request, name=name,
                           built=build_cache / "extensions" / name, cache=build_cache)


@pytest.mark.slow
def test_a_family_folder_with_spaces_dollar_and_quotes_builds_and_runs(odd_family, monkeypatch):
    done = odd_family.done
    assert done.returncode == 0, done.stdout + done.stderr
    status = {r["variant"]: r["status"] for r in json.loads(done.stdout)["results"]}
    assert status == {"torch": "ok", "cpp": "ok"}

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(odd_family.cache))
    again = build_extension(odd_family.request)  # this process finds the CLI's build
    assert again.cached and again.note is None and again.name == odd_family.name
    import torch

    out = torch.empty(3)
    again.module.twice_plus_one(torch.tensor([0.0, 1.0, 2.0]), out)
    assert out.tolist() == [1.0, 3.0, 5.0]
    line = with_line_directive(odd_family.folder / "oddpath_cpu.cpp").splitlines()[0]
    assert line == f'#line 1 "{c_string_body(str(odd_family.folder / "oddpath_cpu.cpp"))}"'
    assert c_string_body('a "b" \\c\nd') == 'a \\"b\\" \\\\c\\012d'


# Loads the oddpath build from one cache per scenario, in a separate process so that a
# SIGBUS from a truncated .so kills that process and not pytest (one process for all:
# each would spend ~3 s importing torch). Real compiles are replaced by a copy of the
# intact .so: the real compile-and-install path is what the first build went through,
# and real rebuilds would cost ~30-50 s per scenario here.
LOAD_SCRIPT = textwrap.dedent("""
    import json, os, shutil, sys
    from pathlib import Path
    import torch
    import gpubench.build as build

    folder, intact, family = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    request = build.BuildRequest(family, folder, (), ("oddpath_cpu.cpp",), ("twice_plus_one",))
    answers = {}
    for scenario, cache in (arg.split("=", 1) for arg in sys.argv[4:]):
        os.environ["GPUBENCH_CACHE_DIR"] = cache
        compiles = []

        def fake_compile(request, name, directory, scenario=scenario, compiles=compiles):
            compiles.append(name)
            if scenario == "rebuild_fails":
                raise build.CompileError("oddpath_cpu.cpp:9: error: the compiler broke too")
            shutil.copy(intact, directory / f"{name}.so")
            return build._import_library(name, directory / f"{name}.so")

        build._compile = fake_compile
        build._FAILED.clear()  # the failing scenario's failure is remembered per process
        for name in [n for n in sys.modules if n.startswith("gb_")]:
            del sys.modules[name]  # each scenario loads its own cache's copy
        try:
            built = build.build_extension(request)
        except build.CompileError as exc:
            answers[scenario] = {"error": exc.summary, "compiles": len(compiles)}
            continue
        out = torch.empty(2)
        built.module.twice_plus_one(torch.tensor([1.0, 2.0]), out)
        answers[scenario] = {"cached": built.cached, "note": built.note, "out": out.tolist(),
                             "compiles": len(compiles)}
    print(json.dumps(answers))
""")


def _corrupt(scenario: str, directory: Path, name: str) -> None:
    """Damage a copy of a finished build the way a full disk, a killed copy or a bad
    sync would."""
    library, marker = directory / f"{name}.so", directory / MARKER
    data = library.read_bytes()
    if scenario in ("truncated", "rebuild_fails"):
        library.write_bytes(data[: len(data) // 2])
    elif scenario == "garbage":  # same size: only the hash can tell
        library.write_bytes(os.urandom(len(data)))
    elif scenario == "empty":
        library.write_bytes(b"")
    elif scenario == "missing":
        library.unlink()
    elif scenario == "marker":
        marker.write_text("{not json")
    elif scenario == "does_not_import":  # garbage whose marker matches: import itself fails
        garbage = os.urandom(4096)
        library.write_bytes(garbage)
        recorded = json.loads(marker.read_text())
        recorded.update(size=len(garbage), sha256=hashlib.sha256(garbage).hexdigest())
        marker.write_text(json.dumps(recorded))


CORRUPTIONS = {  # scenario -> what the note must say
    "truncated": "size {half}, expected {size}",
    "garbage": "sha256 ",
    "empty": "size 0, expected {size}",
    "missing": ".so is missing",
    "marker": "marker file gpubench-build.json is unreadable",
    "does_not_import": "import failed",
}


@pytest.mark.slow
def test_a_corrupt_cached_build_is_rebuilt_once_with_a_note(odd_family, tmp_path):
    assert (odd_family.built / MARKER).is_file(), odd_family.done.stderr
    intact = tmp_path / "intact.so"
    shutil.copy(odd_family.built / f"{odd_family.name}.so", intact)
    size = intact.stat().st_size
    scenarios = ["intact", "rebuild_fails", *CORRUPTIONS]  # rebuild_fails: one failure
    for scenario in scenarios:
        directory = tmp_path / scenario / "extensions" / odd_family.name
        shutil.copytree(odd_family.built, directory)
        _corrupt(scenario, directory, odd_family.name)
    done = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, str(odd_family.folder), str(intact), ODD_FAMILY,
         *(f"{scenario}={tmp_path / scenario}" for scenario in scenarios)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode} (-7: SIGBUS): {done.stderr}"
    answers = json.loads(done.stdout)
    assert answers.pop("intact") == {"cached": True, "note": None, "out": [3.0, 5.0],
                                     "compiles": 0}
    failed = answers.pop("rebuild_fails")
    assert failed["compiles"] == 1 and "the compiler broke too" in failed["error"]
    assert str(tmp_path / "rebuild_fails" / "extensions" / odd_family.name) in failed["error"]
    assert "GPUBENCH_CACHE_DIR" in failed["error"]
    for scenario, expected in CORRUPTIONS.items():
        answer = answers[scenario]
        expected = expected.format(half=size // 2, size=size)
        assert answer["cached"] is False and answer["compiles"] == 1, (scenario, answer)
        assert answer["note"].startswith("cached build was corrupt (") and expected in \
            answer["note"] and answer["note"].endswith("): rebuilt"), (scenario, answer)
        assert answer["out"] == [3.0, 5.0]
        extensions = tmp_path / scenario / "extensions"
        assert sorted(p.name for p in extensions.glob(f"{odd_family.name}*")
                      if p.is_dir()) == [odd_family.name]  # no staging or old folder left
        recorded = json.loads((extensions / odd_family.name / MARKER).read_text())
        assert recorded["size"] == size

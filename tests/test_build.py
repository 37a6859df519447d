"""The load_inline builds: keys, stale locks, reuse, incremental rebuilds in the work folder
(edits, headers with old timestamps, flags), the precompiled header, sources given as
texts, concurrent builders, compile errors, folders with odd paths, corrupt cached builds.

C++ builds cost ~20-45 s each on 2 cores: builds are shared through module fixtures and
the session cache (which also holds the one precompiled header), and each test that
builds says how many builds it costs."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import FAST, FIXTURES, TEST_KERNELS
from gpubench.build import layout, pch
from gpubench.build.cache import MARKER
from gpubench.build.compile import build_extension
from gpubench.build.diagnostics import (
    CompileError,
    c_string_body,
    summarize_compiler_output,
    with_line_directive,
)
from gpubench.build.key import (
    content_key,
    extension_name,
    module_name,
    stable_key,
    toolchain_facts,
)
from gpubench.build.sources import BuildRequest
from gpubench.build.workfolder import (
    DIRTY,
    objects_to_rebuild,
    parse_ninja_deps,
    parse_ninja_variables,
)

# The lean header (build/layout.py: ATen/core/Tensor.h, ~2.5 s a compile) where a test is
# about building, not about torch's C++ frontend: torch/extension.h costs ~12-20 s a
# compile on 2 cores, PCH or not, and the frontend's own PCH is tested where families
# build (test_build_phase's heavy pair, the CLI's CPU C++ variants).
SOURCE = textwrap.dedent("""\
    #include <ATen/core/Tensor.h>
    void triple(at::Tensor x, at::Tensor out) { out.copy_(x.mul(3)); }
""")


def request_for(folder: Path, name: str = "tiny") -> BuildRequest:
    return BuildRequest(name, folder, (), ("triple.cpp",), ("triple",))


def test_parser_reads_real_nvcc_and_gcc_errors():
    nvcc = summarize_compiler_output((FIXTURES / "compiler" / "nvcc_error.txt").read_text())
    gcc = summarize_compiler_output((FIXTURES / "compiler" / "gcc_error.txt").read_text())
    assert nvcc == ['/src/kernels/demo/demo.cu:2: identifier "missing_value" is undefined']
    assert gcc == ["/src/kernels/demo/demo_binding.cpp:2: ‘undeclared_thing’ was not declared "
                   "in this scope"]


def test_parser_reads_labels_of_sources_given_as_text():
    """A text's label is its file name to the compiler (#line): it holds ': ' and '[0]'."""
    output = ("spec.py: cpp_sources[0]: In function ‘int f()’:\n"
              "spec.py: cpp_sources[0]:3:12: error: ‘nope’ was not declared in this scope\n"
              'spec.py: cuda_sources[1](7): error: identifier "x" is undefined\n')
    assert summarize_compiler_output(output) == [
        "spec.py: cpp_sources[0]:3: ‘nope’ was not declared in this scope",
        'spec.py: cuda_sources[1]:7: identifier "x" is undefined']


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
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deeper.cuh").write_text("// and one below it (#include \"sub/...\")\n")
    with_sub = content_key(request, tools)
    (tmp_path / "sub" / "deeper.cuh").write_text("// changed\n")
    assert content_key(request, tools) != with_sub
    name = extension_name(request, key)
    assert name.isidentifier() and name.startswith("gb_tiny_cpu_")


def test_the_work_folder_key_ignores_contents_but_not_flags_names_or_toolchain(tmp_path):
    """The stable key names the work folder and the module: an edit must keep both (or
    main.cpp recompiles), anything that changes a command line must change them."""
    (tmp_path / "triple.cpp").write_text(SOURCE)
    request = request_for(tmp_path)
    tools = {"torch": "2.11", "arch": "sm_90"}
    stable, key = stable_key(request, tools), content_key(request, tools)
    (tmp_path / "triple.cpp").write_text(SOURCE.replace("mul(3)", "mul(4)"))
    (tmp_path / "helper.h").write_text("// new\n")
    assert stable_key(request, tools) == stable and content_key(request, tools) != key
    assert module_name(request, stable).isidentifier()
    variants = [
        BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple",), cflags=("-DX",)),
        BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple",), implicit_headers=True),
        BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple", "other")),
        BuildRequest("tiny", tmp_path / "elsewhere", (), ("triple.cpp",), ("triple",)),
        BuildRequest("tiny2", tmp_path, (), ("triple.cpp",), ("triple",)),
        BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple",),
                     cpp_texts=(("label", "// text"),)),
    ]
    keys = {stable_key(v, tools) for v in variants}
    keys.add(stable_key(request, {**tools, "torch": "2.12"}))
    assert stable not in keys and len(keys) == len(variants) + 1


def test_texts_count_in_the_key_and_only_their_labels_in_the_work_folder_key(tmp_path):
    def texts(body: str, label: str = "spec.py: cpp_sources[0]") -> BuildRequest:
        return BuildRequest("inline", tmp_path, (), (), ("f",), cpp_texts=((label, body),))

    tools = {"torch": "2.11"}
    one, two = texts("int f() { return 1; }"), texts("int f() { return 2; }")
    assert content_key(one, tools) != content_key(two, tools)
    assert stable_key(one, tools) == stable_key(two, tools)
    assert stable_key(texts("x", "spec.py: cpp_sources[1]"), tools) != stable_key(one, tools)
    cuda = BuildRequest("inline", tmp_path, (), (), ("f",), cuda_texts=(("k", "x"),))
    assert cuda.with_cuda and not one.with_cuda
    # file sources and texts are distinct even with equal names and contents
    (tmp_path / "a").write_text("x")
    file_request = BuildRequest("inline", tmp_path, (), ("a",), ("f",))
    assert content_key(file_request, tools) != content_key(texts("x", "a"), tools)


def test_ninja_state_helpers():
    text = "ninja_required_version = 1.3\ncxx = c++\ncflags = -DA -I/x -isystem /t -O3\n" \
           "rule compile\n  command = $cxx $cflags\n"
    assert parse_ninja_variables(text) == {"ninja_required_version": "1.3", "cxx": "c++",
                                           "cflags": "-DA -I/x -isystem /t -O3"}
    deps = parse_ninja_deps("main.o: #deps 2, deps mtime 17 (VALID)\n    /w/main.cpp\n"
                            "    /f/helper.h\n\ncuda.cuda.o: #deps 1, deps mtime 18 (STALE)\n"
                            "    /w/cuda.cu\n\n")
    assert deps == {"main.o": ["/w/main.cpp", "/f/helper.h"], "cuda.cuda.o": ["/w/cuda.cu"]}
    objects = ["cuda.cuda.o", "main.o"]
    same = {"/f/helper.h": "1", "/f/k.cuh": "1"}
    assert objects_to_rebuild(objects, same, same, deps) == []
    changed = {**same, "/f/helper.h": "2"}
    assert objects_to_rebuild(objects, same, changed, deps) == ["main.o"]
    assert objects_to_rebuild(objects, same, changed, None) == objects  # deps unknown
    assert objects_to_rebuild(objects, same, changed, {"main.o": []}) == ["cuda.cuda.o"]
    assert objects_to_rebuild(objects, None, same, deps) == objects  # no record
    assert objects_to_rebuild(objects, same, {**same, "/f/new.h": "1"}, deps) == objects


def test_pch_helpers():
    flags = ["-DTORCH_EXTENSION_NAME=gb_x", "-DTORCH_API_INCLUDE_EXTENSION_H", "-I/family",
             "-I", "/pch", "-isystem", "/torch/include", "-fPIC", "-std=c++20", "-O3"]
    assert pch.pch_flags(flags) == ["-DTORCH_API_INCLUDE_EXTENSION_H", "-isystem",
                                    "/torch/include", "-fPIC", "-std=c++20", "-O3"]
    assert pch.parse_depfile("x.gch: /t/extension.h /a\\ b/c.h \\\n /t/all.h\n") == \
        ["/t/extension.h", "/a b/c.h", "/t/all.h"]
    assert pch.probe_says_used("! /c/pch/torch/extension.h.gch\n probe\n")
    assert not pch.probe_says_used(". /t/torch/extension.h\n.. /t/torch/all.h\n")
    assert pch.pch_key({"a": "1"}) != pch.pch_key({"a": "2"})


@pytest.mark.slow
def test_stale_lock_is_cleared_and_a_new_process_reuses_the_build(tmp_path, monkeypatch,
                                                                   build_cache):
    """One build (the session's first: it also builds the precompiled header beside it)."""
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(build_cache))
    (tmp_path / "triple.cpp").write_text(SOURCE)
    request = request_for(tmp_path)
    tools = toolchain_facts(False)
    name = extension_name(request, content_key(request, tools))
    module = module_name(request, stable_key(request, tools))
    root = build_cache / "extensions"  # cache_root(): the test used to miss it and test nothing
    work = root / "work" / module
    for left in (root / name, root / f"{name}.building", work):  # what killed builds leave
        left.mkdir(parents=True)
        (left / "lock").write_text("")  # torch's baton, whose owner is gone
    (work / DIRTY).write_text("")  # killed mid-compile: what it left is not trusted
    (work / "main.o").write_bytes(b"half an object")

    outcome = {}
    builder = threading.Thread(target=lambda: outcome.update(b=build_extension(request)))
    builder.start()
    builder.join(timeout=300)
    assert not builder.is_alive(), "the build waited on a stale lock"
    built = outcome["b"]
    assert not built.cached and built.name == name and built.note is None
    assert set(built.steps) == {"toolchain", "sources and key", "build"}
    assert sum(built.steps.values()) == pytest.approx(built.seconds, abs=0.05)
    assert not (root / f"{name}.building").exists() and not (root / name / "lock").exists()
    assert not (work / "lock").exists() and not (work / DIRTY).exists()

    import torch

    x = torch.arange(4.0)
    out = torch.empty(4)
    built.module.triple(x, out)
    assert out.tolist() == [0.0, 3.0, 6.0, 9.0]
    assert built.module.__file__ == str(root / name / f"{module}.so")  # never the work folder

    script = textwrap.dedent(f"""
        import time, torch
        from pathlib import Path
        from gpubench.build.compile import build_extension
        from gpubench.build.sources import BuildRequest
        start = time.perf_counter()
        o = build_extension(BuildRequest("tiny", Path({str(tmp_path)!r}), (), ("triple.cpp",),
                                         ("triple",)))
        print(o.cached, time.perf_counter() - start)
        print(",".join(o.steps))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache)})
    first, steps = done.stdout.splitlines()
    cached, seconds = first.split()
    assert cached == "True" and steps == "toolchain,sources and key,load"
    assert float(seconds) < 1.0  # "well under a second" vs ~20 s to build


# ---------------------------------------------------------------- incremental rebuilds

LOOP_SOURCE = textwrap.dedent("""\
    #include <ATen/core/Tensor.h>

    #include "loop.h"

    void scale(at::Tensor x, at::Tensor out) {
    #ifdef LOOP_OFFSET
      out.copy_(x.mul(kLoopScale).add(LOOP_OFFSET));
    #else
      out.copy_(x.mul(kLoopScale));
    #endif
    }
""")
LOOP_HEADER = "#pragma once\nconstexpr float kLoopScale = {scale};\n"


def _scale(module) -> list[float]:
    import torch

    out = torch.empty(3)
    module.scale(torch.tensor([0.0, 1.0, 2.0]), out)
    return out.tolist()


@pytest.fixture(scope="module")
def edit_loop(tmp_path_factory, build_cache):
    """An extension edited the ways a user does, in this process (as a worker that builds
    twice would), each build timed: four builds, ~20-25 s each with the session's PCH.
    1. first build; 2. the .cpp edited; 3. the header replaced by one with an OLD mtime
    (cp -p): ninja's timestamps alone would keep the stale object; 4. everything reverted;
    5. a flag that changes the result (-DLOOP_OFFSET=10): another work folder."""
    folder = tmp_path_factory.mktemp("loop")
    (folder / "loop.cpp").write_text(LOOP_SOURCE)
    (folder / "loop.h").write_text(LOOP_HEADER.format(scale=3))
    request = BuildRequest("loop", folder, (), ("loop.cpp",), ("scale",))
    old = os.environ.get("GPUBENCH_CACHE_DIR")
    os.environ["GPUBENCH_CACHE_DIR"] = str(build_cache)
    try:
        steps = {"first": build_extension(request)}
        (folder / "loop.cpp").write_text(LOOP_SOURCE.replace("x.mul(kLoopScale));",
                                                             "x.mul(kLoopScale).add(1));"))
        steps["cpp_edit"] = build_extension(request)
        header = folder / "loop.h"
        header.write_text(LOOP_HEADER.format(scale=5))
        os.utime(header, (946684800, 946684800))  # 2000-01-01: older than every object
        steps["old_mtime_header"] = build_extension(request)
        (folder / "loop.cpp").write_text(LOOP_SOURCE)
        header.write_text(LOOP_HEADER.format(scale=3))
        steps["reverted"] = build_extension(request)
        flagged = BuildRequest("loop", folder, (), ("loop.cpp",), ("scale",),
                               cflags=("-DLOOP_OFFSET=10",))
        steps["flag"] = build_extension(flagged)
    finally:
        if old is None:
            os.environ.pop("GPUBENCH_CACHE_DIR", None)
        else:
            os.environ["GPUBENCH_CACHE_DIR"] = old
    work = build_cache / "extensions" / "work"
    return SimpleNamespace(steps=steps, request=request, flagged=flagged, work=work,
                           cache=build_cache)


@pytest.mark.slow
def test_edits_rebuild_with_the_new_behaviour_in_one_work_folder(edit_loop):
    steps = edit_loop.steps
    assert _scale(steps["first"].module) == [0.0, 3.0, 6.0]
    assert _scale(steps["cpp_edit"].module) == [1.0, 4.0, 7.0]  # the .cpp edit
    assert _scale(steps["old_mtime_header"].module) == [1.0, 6.0, 11.0]  # kLoopScale = 5
    assert _scale(steps["reverted"].module) == [0.0, 3.0, 6.0]
    assert _scale(steps["flag"].module) == [10.0, 13.0, 16.0]
    assert [s.cached for s in steps.values()] == [False, False, False, True, False]
    # one module name and work folder for the edits, another for the other flags
    modules = {name: Path(s.module.__file__).stem for name, s in steps.items()}
    assert len({modules[k] for k in ("first", "cpp_edit", "old_mtime_header")}) == 1
    assert modules["flag"] != modules["first"]
    assert (edit_loop.work / modules["first"] / "binding.o").is_file()
    assert (edit_loop.work / modules["flag"] / "binding.o").is_file()
    # each content has its own published folder, where its module was imported from
    folders = {s.name for s in steps.values()}
    assert len(folders) == 4 and steps["reverted"].name == steps["first"].name


@pytest.mark.slow
def test_the_precompiled_header_is_ours_shared_and_used_by_the_real_flags(edit_loop):
    """gcc's own verdict (-H prints `! ...gch` for a PCH it uses) with the compiler and
    flags of build.ninja: a PCH built with flags that drifted from torch's would be
    ignored silently, and every compile would take twice as long."""
    work = edit_loop.work / Path(edit_loop.steps["flag"].module.__file__).stem
    variables = parse_ninja_variables((work / "build.ninja").read_text())
    command = [*shlex.split(variables["cxx"]), *shlex.split(variables["cflags"]), "-H",
               "-Winvalid-pch", "-fsyntax-only", "-x", "c++", "-"]
    done = subprocess.run(command, input=pch.probe_source(layout.TENSOR),
                          capture_output=True, text=True, timeout=120)
    assert pch.probe_says_used(done.stderr), done.stderr[:2000]
    used = next(Path(line[2:]).resolve() for line in done.stderr.splitlines()
                if line.startswith("! "))
    # ours (not torch's use_pch one), and the -DLOOP_OFFSET=10 build shares the PCH of the
    # builds without: a macro torch's headers never test does not need a PCH of its own
    root = (edit_loop.cache / "pch").resolve()
    assert used.is_relative_to(root)
    marker = json.loads((root / used.relative_to(root).parts[0] / pch.MARKER).read_text())
    assert "-DLOOP_OFFSET=10" not in marker["recipe"]["flags"] and marker["deps"]


# ---------------------------------------------------------------- sources given as texts

ANSWER = "torch::Tensor answer(torch::Tensor x) {{ return x * {factor}; }}\n"
LABEL = "spec.py: cpp_sources[0]"
BUILD_TEXT = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import torch
    from gpubench.build.compile import build_extension
    from gpubench.build.sources import BuildRequest
    folder, label, text, start_at = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    request = BuildRequest("inline", folder, (), (), ("answer",), cpp_texts=((label, text),))
    time.sleep(max(0.0, start_at - time.time()))  # all builders start together
    built = build_extension(request)
    print(json.dumps({"cached": built.cached, "name": built.name,
                      "module": built.module.__name__.rsplit(".", 1)[-1],
                      "out": built.module.answer(torch.arange(3.0)).tolist()}))
""")


@pytest.mark.slow
def test_processes_building_one_extension_at_once_never_collide(tmp_path, build_cache):
    """Three processes start at once, on an extension given as text only (no file: the
    folder is empty): two with one text, one with another. Same text: one builds, the
    other waits and imports its build. Other text: same work folder, so it waits its
    turn there, and each gets its own behaviour. Two builds, taken in turn."""
    import time

    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache)}
    start_at = time.time() + 4.0  # after the three have imported torch (~3 s)
    texts = [ANSWER.format(factor=2), ANSWER.format(factor=2), ANSWER.format(factor=7)]
    builders = [subprocess.Popen([sys.executable, "-c", BUILD_TEXT, str(tmp_path), LABEL, text,
                                  str(start_at)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
                for text in texts]
    results = []
    for builder in builders:
        out, err = builder.communicate(timeout=600)
        assert builder.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["out"] for r in results] == [[0.0, 2.0, 4.0], [0.0, 2.0, 4.0], [0.0, 7.0, 14.0]]
    assert sorted(r["cached"] for r in results[:2]) == [False, True]
    assert not results[2]["cached"] and results[0]["name"] != results[2]["name"]
    assert len({r["module"] for r in results}) == 1  # one module name, one work folder
    assert not list((build_cache / "extensions").glob("*.building"))


@pytest.mark.slow
def test_a_compile_error_in_a_text_names_its_label(tmp_path, monkeypatch, build_cache):
    """One failing compile."""
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(build_cache))
    broken = "torch::Tensor answer(torch::Tensor x) {\n  return x * not_declared_here;\n}\n"
    request = BuildRequest("inline_error", tmp_path, (), (), ("answer",),
                           cpp_texts=((LABEL, broken),))
    with pytest.raises(CompileError) as error:
        build_extension(request)
    assert f"{LABEL}:2: ‘not_declared_here’ was not declared" in error.value.summary
    assert error.value.log_path.is_file()


# ---------------------------------------------------------------- odd paths, corrupt caches

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
# and real rebuilds would cost ~30-50 s per scenario here. No PCH either: each scenario's
# cache would start building one (~50 s, 800 MB).
LOAD_SCRIPT = textwrap.dedent("""
    import json, os, shutil, sys
    from pathlib import Path
    import torch
    import gpubench.build.cache as cache_module
    import gpubench.build.compile as build

    os.environ["GPUBENCH_PCH"] = "0"
    folder, intact, family = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    request = build.BuildRequest(family, folder, (), ("oddpath_cpu.cpp",), ("twice_plus_one",))
    answers = {}
    for scenario, cache in (arg.split("=", 1) for arg in sys.argv[4:]):
        os.environ["GPUBENCH_CACHE_DIR"] = cache
        compiles = []

        def fake_build(request, sources, work, module, flags, layout, scenario=scenario,
                       compiles=compiles):
            compiles.append(module)
            if scenario == "rebuild_fails":
                raise build.CompileError("oddpath_cpu.cpp:9: error: the compiler broke too")
            shutil.copy(intact, work / f"{module}.so")
            return work / f"{module}.so"

        build._build_library = fake_build
        build._FAILED.clear()  # the failing scenario's failure is remembered per process
        cache_module._LOADED.clear()  # each scenario loads its own cache's copy
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


def _library(directory: Path) -> Path:
    """The published .so, named after its module (the marker says which)."""
    return directory / json.loads((directory / MARKER).read_text())["library"]


def _corrupt(scenario: str, directory: Path) -> None:
    """Damage a copy of a finished build the way a full disk, a killed copy or a bad
    sync would."""
    library, marker = _library(directory), directory / MARKER
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
    shutil.copy(_library(odd_family.built), intact)
    size = intact.stat().st_size
    scenarios = ["intact", "rebuild_fails", *CORRUPTIONS]  # rebuild_fails: one failure
    for scenario in scenarios:
        directory = tmp_path / scenario / "extensions" / odd_family.name
        shutil.copytree(odd_family.built, directory)
        _corrupt(scenario, directory)
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

"""The content-hashed load_inline cache: keys, stale locks, reuse, and compile errors."""

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES, TEST_KERNELS
from gpubench.build import (
    BuildRequest,
    CompileError,
    build_extension,
    content_key,
    extension_name,
    summarize_compiler_output,
    toolchain_facts,
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
    (cache / name).mkdir(parents=True)
    (cache / name / "lock").write_text("")  # what a build killed midway leaves behind

    outcome = {}
    builder = threading.Thread(target=lambda: outcome.update(b=build_extension(request)))
    builder.start()
    builder.join(timeout=300)
    assert not builder.is_alive(), "the build waited on a stale lock"
    built = outcome["b"]
    assert not built.cached and built.name == name

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


@pytest.mark.slow
def test_compile_error_names_the_users_file_and_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    folder = TEST_KERNELS / "badcpp"
    request = BuildRequest("badcpp", folder, (), ("add_one.cpp",), ("add_one",))
    with pytest.raises(CompileError) as info:
        build_extension(request)
    assert "badcpp/add_one.cpp:7:" in info.value.summary
    assert "undeclared_offset" in info.value.summary
    assert info.value.log_path.is_file() and info.value.seconds > 0
    with pytest.raises(CompileError) as again:  # the same process asks again: same answer
        build_extension(request)
    assert again.value.summary == info.value.summary

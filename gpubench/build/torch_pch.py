"""gpubench's precompiled header (PCH) for one build — of the header its binding starts with
(build/layout.py: torch/extension.h or ATen/core/Tensor.h): its key facts, and the exact
flags of the real compile, read from the build.ninja torch writes. pch.py makes and checks
the PCH itself; this module ties it to torch's command lines, and decides when a build
waits for a PCH it started.

Waiting: a PCH of ATen/core/Tensor.h builds in ~5 s, before the ~5 s module file of the same
first build is done, so the build waits for it and every later edit of the binding finds it
(binding 2.5 -> 0.7 s). One of torch/extension.h takes ~35 s, three times the compile it
would speed up: a CUDA build does not wait for it (its first build would take 35 s instead
of ~12 s); the compiler goes on in the background, and the next build in this process (a
worker builds every point of a run) installs it when done. A process that ends first kills
it (atexit; a worker's session is killed by the run), and a later process starts over: the
PCH of torch/extension.h pays off in long runs and `--watch` sessions. A CPU-only build
waits, as before: its kernels are timed on the CPU the compiler would share."""

from __future__ import annotations

import atexit
import inspect
import json
import os
import shlex
import sysconfig
from pathlib import Path

from gpubench.build import pch
from gpubench.build.cache import cache_base
from gpubench.build.flags import cuda_cflags, include_paths
from gpubench.build.sources import BuildRequest
from gpubench.build.workfolder import parse_ninja_variables, plain_path


def start_pch(request: BuildRequest, work: Path, module: str, extra_cflags: list[str],
              header_name: str = "torch/extension.h"):
    """(the -I flag that puts gpubench's PCH folder on the include path, the PCH build
    started beside this one or None). The flag is passed whether or not the PCH exists
    yet, so that ninja sees the same command line before and after it appears.

    The user's own -D/-U flags stay out of the PCH and its key: gcc accepts a PCH when a
    macro defined now is one its headers never mention, so variants that differ by
    -DTILE=16/32 share one PCH (~50 s and ~800 MB each otherwise); a macro that torch's
    headers do test (-DNDEBUG) makes gcc ignore the PCH, and that build compiles
    without it, as before."""
    if not pch.enabled():
        return [], None
    cxx = tuple(shlex.split(os.environ.get("CXX", "c++")))  # torch's get_cxx_compiler()
    identity = pch.gcc_identity(cxx)
    if identity is None:
        return [], None
    import torch
    from torch.utils import cpp_extension

    macros = {flag for flag in request.cflags if flag.startswith(("-D", "-U"))}
    facts = {"torch": torch.__version__, "torch_dir": str(Path(torch.__file__).parent),
             "python_include": str(sysconfig.get_path("include")), "cxx": shlex.join(cxx),
             "compiler": identity, "cuda": str(request.with_cuda),
             "cuda_home": str(cpp_extension.CUDA_HOME) if request.with_cuda else "",
             "cflags": json.dumps([flag for flag in extra_cflags if flag not in macros]),
             "header": header_name}
    directory = cache_base() / "pch" / pch.pch_key(facts)
    directory.mkdir(parents=True, exist_ok=True)
    include = [f"-I{plain_path(directory)}"]
    if _settle_pending(directory):
        return include, None  # still being built by this process, in the background
    command = _cxx_command(request, work, module, [*extra_cflags, *include])
    if command is None:
        return include, None
    compiler, cflags = command
    header = Path(torch.__file__).parent / "include" / header_name
    flags = tuple(flag for flag in pch.pch_flags(cflags) if flag not in macros)
    one = pch.Pch(directory, compiler, flags, header, pch.gcc_identity(compiler) or identity,
                  header_name)
    return include, one.start()


# PCH builds this process left running (folder -> (build, probe command)); see the docstring.
_PENDING: dict[Path, tuple] = {}


def finish_pch(build, include: list[str], module: str, wait: bool = True) -> None:
    """Wait for a PCH started beside the build (or, with wait=False and the compiler still
    busy, leave it to the next build), and check that gcc takes it with the flags it was
    made for plus what a real compile adds (the -I folders, the extension's name, as here;
    the user's macros are gcc's call at each compile)."""
    if build is None:
        return
    probe = [*build.pch.cxx, *include, f"-DTORCH_EXTENSION_NAME={module}", *build.pch.flags]
    if not wait and build.process.poll() is None:
        if not _PENDING:
            atexit.register(_abandon_pending)
        _PENDING[build.pch.directory] = (build, probe)
        return
    build.finish(probe)


def waits_for_pch(request: BuildRequest, header_name: str) -> bool:
    """Whether a build waits for the PCH it started (the module docstring says why)."""
    return header_name != "torch/extension.h" or not request.with_cuda


def _settle_pending(directory: Path) -> bool:
    """Install a PCH this process built in the background once its compiler is done; True
    while it still runs."""
    pending = _PENDING.get(directory)
    if pending is None:
        return False
    build, probe = pending
    if build.process.poll() is None:
        return True
    del _PENDING[directory]
    build.finish(probe)
    return False


def _abandon_pending() -> None:
    """At exit: stop unfinished PCH compilers (their temp files go with them)."""
    for build, _ in _PENDING.values():
        build.abort()
    _PENDING.clear()


def _cxx_command(request: BuildRequest, work: Path, module: str,
                 extra_cflags: list[str]) -> tuple[tuple[str, ...], list[str]] | None:
    """(compiler, flags) of the real compile of main.cpp, as torch writes them into
    build.ninja: exact, rather than a copy of torch's flag logic that a new torch
    version would silently outdate (a PCH built with other flags is never used).
    torch's writer is private: when it is gone, the work folder's build.ninja from an
    earlier build serves (its -I folders may differ; the PCH drops those anyway)."""
    text = _torch_ninja_text(request, work, module, extra_cflags)
    if text is None and (work / "build.ninja").is_file():
        text = (work / "build.ninja").read_text()
    if text is None:
        return None
    variables = parse_ninja_variables(text)
    if "cxx" not in variables or "cflags" not in variables:
        return None
    flags = shlex.split(variables["cflags"]) + shlex.split(variables.get("post_cflags", ""))
    return tuple(shlex.split(variables["cxx"])), flags


def _torch_ninja_text(request: BuildRequest, work: Path, module: str,
                      extra_cflags: list[str]) -> str | None:
    """The build.ninja torch would write for this build, written aside and read back."""
    try:
        from torch.utils.cpp_extension import _write_ninja_file_to_build_library as write
    except ImportError:
        return None
    path = work / "gpubench-flags.ninja"
    sources = [str(work / "main.cpp")] + ([str(work / "cuda.cu")] if request.with_cuda else [])
    arguments = {
        "path": str(path), "name": module, "sources": sources, "extra_cflags": extra_cflags,
        "extra_cuda_cflags": cuda_cflags(request),
        "extra_sycl_cflags": [], "extra_ldflags": [],
        "extra_include_paths": include_paths(request),
        "with_cuda": request.with_cuda, "with_sycl": False, "is_standalone": False}
    try:
        accepted = inspect.signature(write).parameters
        write(**{name: value for name, value in arguments.items() if name in accepted})
        return path.read_text()
    except Exception:  # a private function: any change in it means "no PCH this time"
        return None
    finally:
        path.unlink(missing_ok=True)

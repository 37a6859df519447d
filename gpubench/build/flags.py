"""The flags gpubench adds to torch's command lines, in one place: the compile runs with
them and the precompiled header must be made with exactly the same ones."""

from __future__ import annotations

from gpubench.build.sources import INCLUDE_DIR, BuildRequest
from gpubench.build.workfolder import plain_path


def host_optimization(request: BuildRequest) -> str:
    """-O level of the C++ translation unit (main.cpp). In a CUDA extension it holds host
    glue only — tensor checks and a launch; the kernels are nvcc's, at -O3 — and at -O1
    it compiles in 11.5 s instead of 20.4 s with the precompiled header on 2 cores
    (docs/measurement.md, "Builds"): the difference is template code generation, not
    speed that a timed call could see. A CPU-only extension's kernels are that C++, so it
    keeps -O3. A variant's own cflags come after this flag and win."""
    return "-O1" if request.with_cuda else "-O3"


def cuda_cflags(request: BuildRequest) -> list[str]:
    """nvcc's flags. nvcc's -O is the HOST code's level only (`nvcc --help`: "Specify
    optimization level for host code"; device code is optimized unless -G): -O1 makes
    nvcc ~0.45 s faster on a kernel .cu (1.59 -> 1.14 s, benchmarks/build_phases.py, the
    H100 machine's host), a quarter of an edit's rebuild, and the device code is the same:
    every shipped kernel's PTX is byte-identical at -O1 and -O3 (nvcc 13.0, sm_90a).
    With -lineinfo, ncu's source view maps SASS back to its lines; it costs no
    speed. The variant's own flags come last and win (e.g. -O3 back)."""
    return ["-O1", "-lineinfo", *request.cuda_flags]


def include_paths(request: BuildRequest) -> list[str]:
    """The family folder and gpubench/include, as paths ninja takes literally."""
    return [str(plain_path(request.folder)), str(plain_path(INCLUDE_DIR))]

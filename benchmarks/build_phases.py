"""Where a C++/CUDA extension's build time goes (issue 27), outside gpubench's build code:
the same small translation units compiled by hand with torch's include paths and flags.

    python benchmarks/build_phases.py [--skip-nvcc] [--skip-pch]

Prints one table of seconds (wall time of one compiler process each, in a temp folder):

- the binding translation unit (main.cpp: a destination-passing `square(x, out)` wrapper
  and, where pybind11 is included, load_inline's module definition) under each header a
  binding may start with, at -O1 and -O3, and with a precompiled header (PCH) of that
  header where asked (the PCH's own build time is a row too);
- nvcc on a kernel .cu without torch headers (gpubench's standard layout), on the same
  kernel with torch/types.h prepended (load_inline's default) and with torch/extension.h
  (the seed style), per nvcc phase (`nvcc -time`), with the host side at -O3 and at -O1;
- the -gencode flags torch would pass for the GPUs present (one architecture each).

No GPU is needed: nvcc compiles for sm_90a without one. Every figure depends on the
machine's cores and load: compare rows of one run, not runs on two machines.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sysconfig
import tempfile
import time
from pathlib import Path

BODY = """
void square(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  TORCH_CHECK(out.numel() == x.numel(), "out has ", out.numel(), " elements, x has ", x.numel());
  float* p = static_cast<float*>(out.data_ptr()); (void)p;
}
"""
MODULE = 'PYBIND11_MODULE(bp_square, m) { m.def("square", &square, "square"); }\n'
# (label, header, with load_inline's module definition): from torch's whole C++ frontend
# down to the tensor type alone (a binding translation unit without pybind11).
PRELUDES = (
    ("torch/extension.h (load_inline's default)", "torch/extension.h", True),
    ("torch/csrc/utils/pybind.h (pybind11 + Tensor casters)", "torch/csrc/utils/pybind.h", True),
    ("ATen/core/Tensor.h, no pybind11", "ATen/core/Tensor.h", False),
)
KERNEL = """
__global__ void square_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}
void square_launch(const float* x, float* y, long n, cudaStream_t s) {
  square_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);
}
"""


def torch_flags() -> tuple[list[str], list[str]]:
    """(-I flags, other flags) of a torch extension compile on this machine."""
    import torch
    from torch.utils import cpp_extension

    include = [f"-I{p}" for p in cpp_extension.include_paths()]
    include.append(f"-I{sysconfig.get_paths()['include']}")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return include, ["-std=c++17", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                     "-DTORCH_EXTENSION_NAME=bp_square", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def timed(command: list[str], cwd: Path) -> float:
    """Wall seconds of one compiler run; its own output is kept for a failure only."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return seconds


def binding_rows(work: Path, include: list[str], flags: list[str], pch: bool):
    for number, (label, header, module) in enumerate(PRELUDES):
        source = work / f"binding{number}.cpp"
        source.write_text(f"#include <{header}>\n{BODY}{MODULE if module else ''}")
        for level in ("-O1", "-O3"):
            seconds = timed(["c++", *flags, level, *include, "-c", source.name, "-o",
                             f"{source.stem}.o"], work)
            yield f"binding .cpp, {label}, {level}", seconds
        if pch:
            yield from _with_pch(work, number, label, header, module, include, flags)


def _with_pch(work: Path, number: int, label: str, header: str, module: bool,
              include: list[str], flags: list[str]) -> list:
    """The PCH of `header` at -O1 (gcc takes a PCH only with the flags it was made with),
    then the binding compiled with it."""
    folder = work / f"pch{number}"
    (folder / Path(header).parent).mkdir(parents=True, exist_ok=True)
    gch = folder / f"{header}.gch"
    stub = work / f"pch{number}.h"
    stub.write_text(f"#include <{header}>\n")
    seconds = timed(["c++", *flags, "-O1", *include, "-x", "c++-header", stub.name,
                     "-o", str(gch)], work)
    rows = [(f"  PCH of {header}, -O1: build ({gch.stat().st_size / 1e6:.0f} MB)", seconds)]
    source = work / f"binding{number}_pch.cpp"
    source.write_text(f"#include <{header}>\n{BODY}{MODULE if module else ''}")
    seconds = timed(["c++", *flags, "-O1", f"-I{folder}", *include, "-Winvalid-pch",
                     "-Werror=invalid-pch", "-c", source.name, "-o", f"{source.stem}.o"], work)
    rows.append((f"binding .cpp, {label}, -O1 with its PCH", seconds))
    return rows


def nvcc_rows(work: Path, include: list[str], flags: list[str]):
    """Per-phase seconds of nvcc on the plain kernel and on the torch-including one."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    plain = work / "plain.cu"
    plain.write_text(KERNEL)
    lecture = work / "lecture.cu"
    lecture.write_text("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
                       + KERNEL)
    seed = work / "seed.cu"
    seed.write_text("#include <torch/extension.h>\n" + KERNEL)
    arch = ["-gencode=arch=compute_90a,code=sm_90a"]
    for source, label, levels in (
            (plain, "kernel .cu, no torch headers", ("-O3", "-O1")),
            (lecture, "kernel .cu with torch/types.h (load_inline's default)", ("-O3", "-O1")),
            (seed, "kernel .cu with torch/extension.h (seed style)", ("-O1",))):
        for level in levels:
            report = work / f"{source.stem}{level}.csv"
            nvcc_flags = [flag for flag in flags if flag != "-fPIC"]
            seconds = timed([nvcc, *nvcc_flags, level, *arch, "-Xcompiler", "-fPIC", *include,
                             "-c", source.name, "-o", f"{source.stem}.o",
                             "-time", report.name], work)
            yield f"{label}, host {level}: nvcc total", seconds
            yield from ((f"  {phase}", ms / 1000) for phase, ms in _phases(report))


def _phases(report: Path) -> list[tuple[str, float]]:
    """(phase, ms) from `nvcc -time`, phases of one name summed (gcc preprocesses twice)."""
    totals: dict[str, float] = {}
    with report.open() as handle:
        for row in csv.reader(handle):
            if len(row) < 8 or row[1].strip() in ("phase name", "nvcc (driver)"):
                continue
            totals[row[1].strip()] = totals.get(row[1].strip(), 0.0) + float(row[6])
    return list(totals.items())


def arch_flags() -> str:
    try:
        from torch.utils.cpp_extension import _get_cuda_arch_flags
        return " ".join(_get_cuda_arch_flags())
    except Exception as exc:  # private, and it needs a GPU or TORCH_CUDA_ARCH_LIST
        return f"n/a ({type(exc).__name__}: {exc})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-nvcc", action="store_true")
    parser.add_argument("--skip-pch", action="store_true")
    parser.add_argument("--only-nvcc", action="store_true")
    options = parser.parse_args()
    include, flags = torch_flags()
    work = Path(tempfile.mkdtemp(prefix="gpubench-build-phases-"))
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"torch arch flags: {arch_flags()}")
    print("| what | s |\n|---|---:|", flush=True)
    rows = [] if options.only_nvcc else [binding_rows(work, include, flags, not options.skip_pch)]
    if not options.skip_nvcc:
        rows.append(nvcc_rows(work, include, flags))
    try:
        for label, seconds in (row for group in rows for row in group):
            print(f"| {label} | {seconds:.2f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Build-loop benchmark (issues 10 and 27): how long does a C++/CUDA variant take to build,
reload and rebuild after an edit, as a gpubench worker sees it?

    python benchmarks/build_loop.py [--style standard,seed,lecture] [--family kernels/square]
                                    [--no-pch] [--keep]

Styles (CUDA builds when torch.cuda.is_available(); the CPU machine builds `standard` only,
from square_cpu.cpp, kernel and binding in one file):
- standard: kernels/square as shipped — kernels in square.cu without torch headers, the
  torch-facing wrapper in square_binding.cpp (gpubench/binding.h);
- seed: the same kernel in one .cu that includes torch/extension.h and holds the wrapper
  too, the .cpp a declaration (how GPU MODE and KernelBench seeds are written);
- lecture: GPU MODE lecture 1's square_matrix as pasted (examples/gpu_mode_lecture1),
  built with load_inline's defaults (torch/types.h prepended to the .cu).

Works on copies in a temp dir, with a throwaway build cache (GPUBENCH_CACHE_DIR), and runs
every step in a fresh Python process, as gpubench workers do, so nothing is reused in memory
(CUDA is initialized before the build is timed, as in a worker).
Prints one table of seconds per style:

- "build s": BuildOutcome.seconds, what build_extension took in that process;
- "process s": the whole child process, torch import (~2-3 s) included;
- "CPU s": user + system CPU time of the child and every compiler it ran: the work done,
  which, unlike wall time, does not grow when other processes share the machine.

Steps, in order (each depends on the cache the previous ones left): the first build of a
new extension (empty cache, nothing precompiled); a cached reload; a comment edit and then a
code edit of the kernel source; the same two of the binding (standard CUDA only); the first
build of another new extension (a second copy under another family name) with whatever
machine-wide state the first left warm. `lecture` stops after the cached reload: its edits
are the seed style's (a .cu that includes torch headers).

--no-pch sets GPUBENCH_PCH=0 in every step. After each table: the precompiled header(s)
the run made, with their build time and size. `--family` points `standard` at another
copy of kernels/square (e.g. an older tree's, for a before/after table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LECTURE = ROOT / "examples" / "gpu_mode_lecture1" / "square_matrix" / "spec.py"
COMMENT_EDIT = "\n// build_loop.py: a comment edit\n"
# A code edit that changes the object but not what the function does.
CODE_EDIT = {".cu": "\n__device__ int build_loop_edit;\n",
             ".cpp": "\nint build_loop_edit() { return 1; }\n"}

# The seed style: kernel and torch wrapper in one .cu that includes torch/extension.h.
SEED_CU = """#include <torch/extension.h>

__global__ void square_kernel(const float* x, float* y, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * x[i];
}

void square(torch::Tensor x, torch::Tensor out) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
  const int64_t n = x.numel();
  square_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
}
"""
SEED_DECLARATION = "void square(torch::Tensor x, torch::Tensor out);"

# Runs in each child: one build_extension call and a check that the function still works.
CHILD = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
import torch
if torch.cuda.is_available():  # a worker has CUDA up before it builds (~0.3 s, not a build's)
    torch.cuda.init()
    torch.cuda.get_device_capability()
from gpubench.build.compile import build_extension
from gpubench.build.sources import BuildRequest
args = json.loads(sys.argv[1])
texts = {kind: tuple((label, Path(path).read_text()) for label, path in args[kind])
         for kind in ("cpp_texts", "cuda_texts")}
request = BuildRequest(args["family"], Path(args["folder"]), tuple(args["cuda"]),
                       tuple(args["cpp"]), (args["function"],), cuda_flags=tuple(args["flags"]),
                       implicit_headers=args["implicit"], **texts)
outcome = build_extension(request)
device = "cuda" if args["cuda"] or texts["cuda_texts"] else "cpu"
fn = getattr(outcome.module, args["function"])
if args["returns"]:
    x = torch.arange(64.0, device=device).reshape(8, 8)
    ok = torch.equal(fn(x), x * x)
else:
    x = torch.arange(8.0, device=device)
    out = torch.empty_like(x)
    fn(x, out)
    ok = torch.equal(out, x * x)
print(json.dumps({"seconds": outcome.seconds, "cached": outcome.cached, "ok": ok,
                  "name": outcome.name, "note": outcome.note,
                  "after_import_s": time.perf_counter() - start}))
"""


@dataclass
class Style:
    """One way of writing the same variant: its folder, files, texts and edit targets."""

    name: str
    folder: Path
    cuda: tuple[str, ...] = ()
    cpp: tuple[str, ...] = ()
    cuda_texts: tuple[tuple[str, str], ...] = ()  # (label, path of a file holding the text)
    cpp_texts: tuple[tuple[str, str], ...] = ()
    function: str = "square"
    returns: bool = False
    implicit: bool = False
    flags: tuple[str, ...] = ()
    kernel: Path | None = None  # the file the kernel edits go to
    binding: Path | None = None  # the file the binding edits go to (None: no such step)

    def args(self, family: str, folder: Path) -> dict:
        moved = {"cuda_texts": [(label, str(folder / Path(path).name))
                                for label, path in self.cuda_texts],
                 "cpp_texts": [(label, str(folder / Path(path).name))
                               for label, path in self.cpp_texts]}
        return {"family": family, "folder": str(folder), "cuda": list(self.cuda),
                "cpp": list(self.cpp), "function": self.function, "returns": self.returns,
                "implicit": self.implicit, "flags": list(self.flags), **moved}


def make_style(name: str, work: Path, family_folder: Path, with_cuda: bool) -> Style:
    folder = work / f"bl_{name}"
    if name == "standard":
        shutil.copytree(family_folder, folder)
        if not with_cuda:
            return Style(name, folder, cpp=("square_cpu.cpp",), kernel=folder / "square_cpu.cpp")
        return Style(name, folder, cuda=("square.cu",), cpp=("square_binding.cpp",),
                     kernel=folder / "square.cu", binding=folder / "square_binding.cpp")
    folder.mkdir(parents=True)
    if name == "seed":
        (folder / "square_seed.cu").write_text(SEED_CU)
        (folder / "declaration.cpp.txt").write_text(SEED_DECLARATION)
        return Style(name, folder, cuda=("square_seed.cu",),
                     cpp_texts=(("cpp_sources[0]", "declaration.cpp.txt"),),
                     kernel=folder / "square_seed.cu")
    import runpy

    lecture = runpy.run_path(str(LECTURE))
    (folder / "cuda_source.cu.txt").write_text(lecture["cuda_source"])
    (folder / "cpp_source.cpp.txt").write_text(lecture["cpp_source"])
    return Style(name, folder, cuda_texts=(("cuda_sources[0]", "cuda_source.cu.txt"),),
                 cpp_texts=(("cpp_sources[0]", "cpp_source.cpp.txt"),),
                 function="square_matrix", returns=True, implicit=True, flags=("-O2",),
                 kernel=folder / "cuda_source.cu.txt")


def run_step(style: Style, family: str, folder: Path, env: dict) -> dict:
    """One build_extension call in a fresh process; its figures plus the process's wall time."""
    args = json.dumps(style.args(family, folder))
    cpu_before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, args], capture_output=True, text=True,
                          env=env, cwd=folder.parent, timeout=1800)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"step failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall, "cpu": cpu}


def _children_cpu() -> float:
    """User + system seconds of every waited-for descendant (ninja and the compilers are
    waited for by the child, which we wait for)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def edit_kind(path: Path) -> str:
    return ".cu" if path.name.endswith((".cu", ".cu.txt")) else ".cpp"


def machine() -> str:
    import platform

    import torch

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    return f"CPU ({os.cpu_count()} cores, {platform.processor() or platform.machine()}), " \
           f"torch {torch.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--style", default="standard,seed,lecture",
                        help="comma-separated: standard, seed, lecture (CUDA only: seed, lecture)")
    parser.add_argument("--family", type=Path, default=ROOT / "kernels" / "square",
                        help="the folder `standard` copies (default kernels/square)")
    parser.add_argument("--no-pch", action="store_true",
                        help="build without gpubench's precompiled header (GPUBENCH_PCH=0)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    options = parser.parse_args()

    import torch

    with_cuda = torch.cuda.is_available()
    names = [name for name in options.style.split(",") if with_cuda or name == "standard"]
    print(f"build loop on {machine()}, {'CUDA' if with_cuda else 'CPU'} build", file=sys.stderr)
    for name in names:
        work = Path(tempfile.mkdtemp(prefix=f"gpubench-build-loop-{name}-"))
        env = {**os.environ, "GPUBENCH_CACHE_DIR": str(work / "cache")}
        if options.no_pch:
            env["GPUBENCH_PCH"] = "0"
        style = make_style(name, work, options.family, with_cuda)
        print(f"\n### {name}: {', '.join(style.cuda + style.cpp) or 'load_inline texts'}")
        print_table(run_style(style, work, env))
        print_pch(work / "cache" / "pch")
        if options.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_style(style: Style, work: Path, env: dict) -> list[tuple[str, dict | None]]:
    rows: list[tuple[str, dict | None]] = []
    second = work / f"{style.folder.name}_b"
    shutil.copytree(style.folder, second)

    def step(label: str, family: str = style.folder.name, folder: Path = style.folder) -> None:
        result = run_step(style, family, folder, env)
        rows.append((label, result))
        print(f"  {style.name}: {label}: {result['seconds']:.2f} s", file=sys.stderr, flush=True)

    step("first build of a new extension (cold: empty cache)")
    step("cached reload, new process")
    if style.name == "lecture":
        return rows  # its edits are the seed style's: a .cu with torch headers
    originals = {}
    for path in (style.kernel, style.binding):
        if path is None:
            continue
        originals[path] = path.read_text()
        path.write_text(originals[path] + COMMENT_EDIT)
        step(f"comment edit of {path.name} -> rebuild")
        path.write_text(originals[path] + COMMENT_EDIT + CODE_EDIT[edit_kind(path)])
        step(f"code edit of {path.name} -> rebuild")
    for path, text in originals.items():
        path.write_text(text)
    step("first build of another new extension (machine-wide state warm)",
         second.name, second)
    return rows


def print_table(rows: list[tuple[str, dict | None]]) -> None:
    print("| step | build s | process s | CPU s | cached | check |")
    print("|---|---:|---:|---:|---|---|")
    for label, result in rows:
        if result is None:
            print(f"| {label} | - | - | - | - | - |")
            continue
        note = f" ({result['note']})" if result["note"] else ""
        print(f"| {label} | {result['seconds']:.2f} | {result['wall']:.2f} | "
              f"{result['cpu']:.1f} | {result['cached']}{note} | "
              f"{'ok' if result['ok'] else 'WRONG'} |")


def print_pch(root: Path) -> None:
    """One line per precompiled header in the throwaway cache: its one-time cost."""
    for marker in sorted(root.glob("*/pch.json")):
        recorded = json.loads(marker.read_text())
        for gch in sorted(marker.parent.rglob("*.gch")):
            header = gch.relative_to(marker.parent).as_posix()[:-len(".gch")]
            print(f"precompiled {header}: built in {recorded.get('seconds')} s "
                  f"(beside a build), {gch.stat().st_size / 1e6:.0f} MB")
    for failed in sorted(root.glob("*/pch-failed.json")):
        print(f"precompiled header {failed.parent.name} FAILED: "
              f"{json.loads(failed.read_text()).get('why')}")


if __name__ == "__main__":
    main()

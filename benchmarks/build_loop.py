"""Build-loop benchmark (issue 10): how long does a C++/CUDA variant take to build, reload
and rebuild after a one-line edit, as a gpubench worker sees it?

    python benchmarks/build_loop.py [--family kernels/square] [--no-pch] [--keep]

Builds a CUDA extension when torch.cuda.is_available(), else the CPU build of the same
variant. Works on a copy of the family folder in a temp dir, with a throwaway build
cache (GPUBENCH_CACHE_DIR), and runs every step in a fresh Python process, as gpubench
workers do, so nothing is reused in memory. Prints one table of seconds:

- "build s": BuildOutcome.seconds, what build_extension took in that process;
- "process s": the whole child process, torch import (~2-3 s) included;
- "CPU s": user + system CPU time of the child and every compiler it ran: the work done,
  which, unlike wall time, does not grow when other processes share the machine.

Steps, in order (each depends on the cache the previous ones left):
 1. first build of a new extension: empty cache, nothing precompiled;
 2. cached reload in a new process;
 3. one-line edit of the kernel source (.cu, or the CPU .cpp) -> rebuild;
 4. one-line edit of the binding .cpp -> rebuild (CUDA only: on CPU the kernel
    source is also the binding, one translation unit);
 5. both edits reverted -> content seen before;
 6. first build of another new extension (a second copy under another family name),
    with whatever machine-wide state step 1 left warm (a precompiled header, if any).

--no-pch sets GPUBENCH_PCH=0 in every step: what the work folder alone (ninja reusing
unchanged objects) gives, without gpubench's precompiled torch/extension.h. After the
table: the precompiled header(s) the run made, with their build time and size.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The sources gpubench builds for kernels/square (its spec.py's CudaVariant "cuda"):
# kernel .cu + torch binding on a GPU machine, the one CPU .cpp elsewhere.
CUDA_SOURCES = {"cuda": ("square.cu",), "cpp": ("square_binding.cpp",)}
CPU_SOURCES = {"cuda": (), "cpp": ("square_cpu.cpp",)}
FUNCTION = "square"
EDIT = "\n// build_loop.py: a one-line edit\n"

# Runs in each child: one build_extension call and a check that the function still works.
CHILD = """
import json, sys, time
from pathlib import Path
start = time.perf_counter()
import torch
from gpubench.build.compile import build_extension
from gpubench.build.sources import BuildRequest
args = json.loads(sys.argv[1])
request = BuildRequest(args["family"], Path(args["folder"]), tuple(args["cuda"]),
                       tuple(args["cpp"]), (args["function"],))
outcome = build_extension(request)
device = "cuda" if args["cuda"] else "cpu"
x = torch.arange(8.0, device=device)
out = torch.empty_like(x)
getattr(outcome.module, args["function"])(x, out)
ok = torch.equal(out, x * x)
print(json.dumps({"seconds": outcome.seconds, "cached": outcome.cached, "ok": ok,
                  "name": outcome.name, "note": outcome.note,
                  "after_import_s": time.perf_counter() - start}))
"""


def run_step(family: str, folder: Path, sources: dict, env: dict) -> dict:
    """One build_extension call in a fresh process; its figures plus the process's wall time."""
    args = json.dumps({"family": family, "folder": str(folder), "function": FUNCTION, **sources})
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


def append(path: Path, text: str) -> str:
    """Append `text` to the file; returns the original text so the edit can be reverted."""
    original = path.read_text()
    path.write_text(original + text)
    return original


def machine() -> str:
    import platform

    import torch

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    return f"CPU ({os.cpu_count()} cores, {platform.processor() or platform.machine()}), " \
           f"torch {torch.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", type=Path, default=ROOT / "kernels" / "square",
                        help="a family folder with square's file names (default kernels/square)")
    parser.add_argument("--no-pch", action="store_true",
                        help="build without gpubench's precompiled header (GPUBENCH_PCH=0)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    options = parser.parse_args()

    import torch

    with_cuda = torch.cuda.is_available()
    sources = CUDA_SOURCES if with_cuda else CPU_SOURCES
    work = Path(tempfile.mkdtemp(prefix="gpubench-build-loop-"))
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(work / "cache")}
    if options.no_pch:
        env["GPUBENCH_PCH"] = "0"
    first, second = work / "bl_square", work / "bl_square_b"
    shutil.copytree(options.family, first)
    shutil.copytree(options.family, second)
    kernel = first / (sources["cuda"] or sources["cpp"])[0]
    binding = first / sources["cpp"][0]

    rows: list[tuple[str, dict | None]] = []

    def step(label: str, family: str = "bl_square", folder: Path = first) -> None:
        result = run_step(family, folder, sources, env)
        rows.append((label, result))
        print(f"  {label}: {result['seconds']:.2f} s", file=sys.stderr, flush=True)

    print(f"build loop on {machine()}, {'CUDA' if with_cuda else 'CPU'} build, in {work}",
          file=sys.stderr)
    step("first build of a new extension (cold: empty cache)")
    step("cached reload, new process")
    kernel_text = append(kernel, EDIT)
    step(f"one-line edit of {kernel.name} -> rebuild")
    if with_cuda:
        binding_text = append(binding, EDIT)
        step(f"one-line edit of {binding.name} -> rebuild")
        binding.write_text(binding_text)
    else:
        rows.append((f"binding edit: n/a on CPU ({kernel.name} is kernel and binding)", None))
    kernel.write_text(kernel_text)
    step("edits reverted (content built before) -> reload")
    step("first build of another new extension (machine-wide state warm)", "bl_square_b",
         second)
    print_table(rows)
    print_pch(work / "cache" / "pch")
    if options.keep:
        print(f"kept {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


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
        gch = marker.parent / "torch" / "extension.h.gch"
        size = gch.stat().st_size / 1e6 if gch.is_file() else 0.0
        print(f"precompiled header {marker.parent.name}: built in {recorded.get('seconds')} s "
              f"(beside the first build), {size:.0f} MB")
    for failed in sorted(root.glob("*/pch-failed.json")):
        print(f"precompiled header {failed.parent.name} FAILED: "
              f"{json.loads(failed.read_text()).get('why')}")


if __name__ == "__main__":
    main()

"""What a fresh worker pays the first time it runs each kind of point: the costs every lane
of a several-GPU run pays once in its own span (journal, issue 32).

    python3 scripts/first_use_probe.py [--profile-top 12] [--prewarm | --early] [--micro]

In this process, gpubench's Executor (what a worker runs) takes the first points a lane of
`configs/gpu-full.toml` takes (largest first), then the same points again. For each point:
the first time, the second time, and the difference (the first use). Points whose first
use costs more than 0.1 s get the top of their cProfile (cumulative). Run it once before,
so that the builds and Triton's cache are warm, as in a warm run: the first process fills
them, the second measures.

--prewarm starts the worker's prewarm thread (run/worker/prewarm.py) after torch's import and
waits for it before the first point, as a worker does; --early starts it before torch's
import instead. --micro first times the smallest first uses one by one (a cuBLAS matmul,
a CUDA graph capture, a Triton launch) so that the points' first uses show what is left.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

from gpubench.run.worker.prewarm import Prewarm  # imports no torch: --early starts it first

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
M4096 = {"M": 4096, "N": 4096, "K": 4096}
POINTS = [  # (family, variant, dtype, shape): a lane's first points, then other kinds
    ("matmul", "torch", "float32", M4096),
    ("matmul", "triton_tc", "float32", M4096),
    ("matmul", "triton", "float16", M4096),
    ("matmul", "torch", "bfloat16", M4096),
    ("square", "torch", "float32", {"n": 1 << 27}),
    ("softmax", "torch", "float32", {"rows": 4096, "cols": 32768}),
    ("square", "cuda", "float32", {"n": 1 << 20}),
    ("vector_add", "cuda", "bfloat16", {"n": 1 << 27}),
    ("matmul", "wmma", "float16", {"M": 1024, "N": 1024, "K": 1024}),
    ("softmax", "online", "float32", {"rows": 4096, "cols": 128}),
]


def tasks() -> list:
    from gpubench.records.point import Shape, Task
    from gpubench.timing.settings import TimingSettings

    settings = TimingSettings(warmup_s=0.1, max_time_s=0.5, min_samples=5)
    return [Task(index, family, str(KERNELS / family), variant, dtype, Shape(dict(shape)),
                 0, settings)
            for index, (family, variant, dtype, shape) in enumerate(POINTS)]


def new_packages(before: set[str]) -> str:
    """The modules this step imported, by package (two levels): what a first use loads."""
    fresh = [name for name in sys.modules if name not in before]
    packages: dict[str, int] = {}
    for name in fresh:
        key = ".".join(name.split(".")[:2])
        packages[key] = packages.get(key, 0) + 1
    top = sorted(packages.items(), key=lambda item: -item[1])[:8]
    return f"{len(fresh)} modules imported" + (": " + ", ".join(
        f"{name} {count}" for name, count in top) if top else "")


def top_of(profile: cProfile.Profile, count: int) -> str:
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(count)
    lines = text.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "cumtime" in line), 0)
    return "\n".join(lines[start:start + count + 1])


def micro_first_uses(torch) -> None:
    """The smallest first uses, each timed on its own (then once more, warm)."""
    small = torch.ones(64, 64, device="cuda")

    def graph_capture():
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            small.add(1.0)
        graph.replay()

    def triton_launch():
        import triton
        import triton.language as tl

        @triton.jit
        def _copy(src, dst, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)

        out = torch.empty_like(small)
        _copy[(4,)](small, out, small.numel(), BLOCK=1024)

    steps = (("cuBLAS fp32 matmul", lambda: small @ small),
             ("cuBLAS fp16 matmul", lambda: small.half() @ small.half()),
             ("cuBLAS bf16 matmul", lambda: small.bfloat16() @ small.bfloat16()),
             ("CUDA graph capture", graph_capture), ("Triton launch", triton_launch))
    for name, step in steps:
        times = []
        for _ in range(2):
            began = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - began)
        print(f"micro  {name}: first {times[0]:.3f} s, again {times[1]:.3f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile-top", type=int, default=0,
                        help="cProfile each first time and print this many lines of the "
                             "slow ones (cProfile slows Python: time without it first)")
    parser.add_argument("--prewarm", action="store_true",
                        help="the worker's prewarm thread, started after torch's import")
    parser.add_argument("--early", action="store_true",
                        help="the prewarm thread started before torch's import")
    parser.add_argument("--micro", action="store_true",
                        help="time the smallest first uses one by one before the points")
    args = parser.parse_args()
    started = time.perf_counter()
    prewarm = Prewarm(torch_pending=True) if args.early else None
    import torch

    if prewarm is not None:
        prewarm.torch_imported()

    from gpubench.families.spec import Machine
    from gpubench.run.worker.execute import Executor

    imported = time.perf_counter()
    if args.prewarm and prewarm is None:
        prewarm = Prewarm()
    executor = Executor(Machine(has_cuda=True, has_triton=True), lambda phase: None)
    torch.zeros(1, device="cuda")
    print(f"torch imported {imported - started:.2f} s, a CUDA context "
          f"{time.perf_counter() - imported:.2f} s", flush=True)
    if prewarm is not None:
        print(prewarm.wait(), f"(at {time.perf_counter() - started:.2f} s)", flush=True)
    if args.micro:
        micro_first_uses(torch)
    first, profiles = [], []
    for task in tasks():
        profile = cProfile.Profile()
        modules = set(sys.modules)
        began = time.perf_counter()
        if args.profile_top:
            profile.enable()
        result = executor.run(task)
        profile.disable()
        first.append(time.perf_counter() - began)
        profiles.append(profile)
        print(f"first  {first[-1]:.3f} s {task.label} {result.status}; "
              f"{new_packages(modules)}", flush=True)
    for task, once, profile in zip(tasks(), first, profiles, strict=True):
        began = time.perf_counter()
        executor.run(task)
        again = time.perf_counter() - began
        print(f"again  {again:.3f} s (first use {once - again:+.3f} s) {task.label}",
              flush=True)
        if args.profile_top and once - again > 0.1:
            print(top_of(profile, args.profile_top), flush=True)


if __name__ == "__main__":
    main()

"""What a fresh worker pays the first time it runs each kind of point: the costs every lane
of a several-GPU run pays once in its own span (journal, issue 32).

    python3 scripts/first_use_probe.py [--profile-top 12]

In this process, gpubench's Executor (what a worker runs) takes the first points a lane of
`configs/gpu-full.toml` takes (largest first), then the same points again. For each point:
the first time, the second time, and the difference (the first use). Points whose first
use costs more than 0.1 s get the top of their cProfile (cumulative). Run it once before,
so that the builds and Triton's cache are warm, as in a warm run: the first process fills
them, the second measures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

from gpubench.families.spec import Machine
from gpubench.records.point import Shape, Task
from gpubench.run.execute import Executor
from gpubench.timing.settings import TimingSettings

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
SETTINGS = TimingSettings(warmup_s=0.1, max_time_s=0.5, min_samples=5)
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


def tasks() -> list[Task]:
    return [Task(index, family, str(KERNELS / family), variant, dtype, Shape(dict(shape)),
                 0, SETTINGS)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile-top", type=int, default=0,
                        help="cProfile each first time and print this many lines of the "
                             "slow ones (cProfile slows Python: time without it first)")
    args = parser.parse_args()
    started = time.perf_counter()
    import torch

    executor = Executor(Machine(has_cuda=True, has_triton=True), lambda phase: None)
    torch.zeros(1, device="cuda")
    print(f"torch and a CUDA context: {time.perf_counter() - started:.2f} s", flush=True)
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

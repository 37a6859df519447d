"""Does pinning gpubench to fixed CPUs steady its launch-bound points between runs?

    python3 scripts/pinning_probe.py OUT [--runs 6] [--cpus 2,3]

Launch-bound points (a few us) move by a run-level shift of up to +-5% between two
processes of unchanged code (docs/journal/perf-notes.md, "Twenty-fifth to twenty-eighth
runs"), where kernels above 10 us move 0.2%. One guess is the host: which cores the
worker's launching thread lands on, and their clocks. This runs a suite of launch-bound
points (square and vector_add at 2^20, softmax 4096 x 128; float32 and bfloat16) once to
build, then `--runs` times unpinned and `--runs` times under `taskset -c CPUS`,
alternating, each a fresh `gpubench run`; then prints, per condition, each run's shift
(the median over points of its median / the condition's per-point median - 1) and the
per-point spread over its runs ((max - min) / median, median and p90 over points).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

from launch_bound_shift import medians  # scripts/: one reader of a run's medians

SUITE = """families = ["square", "vector_add", "softmax"]
dtypes = ["float32", "bfloat16"]
[sizes]
square = ["2^20"]
vector_add = ["2^20"]
[axes]
softmax = {cols = [128]}
[timing]
warmup_ms = 100
max_time_ms = 500
min_samples = 5
"""


def run(config: Path, out: Path, pin: str | None) -> None:
    command = [sys.executable, "-m", "gpubench", "run", "--config", str(config), "--out",
               str(out), "--force", "--no-compiled"]
    if pin:
        command = ["taskset", "-c", pin, *command]
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)


def report(name: str, runs: list[dict]) -> None:
    keys = set.intersection(*(set(r) for r in runs))
    typical = {k: statistics.median(r[k] for r in runs) for k in keys}
    shifts = [statistics.median(r[k] / typical[k] - 1 for k in keys) * 100 for r in runs]
    spreads = sorted((max(r[k] for r in runs) - min(r[k] for r in runs)) / typical[k] * 100
                     for k in keys)
    p90 = spreads[min(len(spreads) - 1, int(0.9 * len(spreads)))]
    print(f"| {name} | {len(runs)} | {len(keys)} | "
          f"{' '.join(f'{s:+.1f}' for s in shifts)} | {max(shifts) - min(shifts):.1f} | "
          f"{statistics.median(spreads):.1f}% / {p90:.1f}% |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--cpus", default="2,3")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    config = args.out / "launch-bound.toml"
    config.write_text(SUITE)
    run(config, args.out / "build", None)  # builds and Triton's cache, not measured
    found: dict[str, list[dict]] = {"unpinned": [], f"taskset -c {args.cpus}": []}
    for index in range(args.runs):
        for name, pin in (("unpinned", None), (f"taskset -c {args.cpus}", args.cpus)):
            folder = args.out / f"{name.split()[0]}-{index}"
            run(config, folder, pin)
            if not (folder / "results.json").exists():  # a --cpus taskset refused, say
                sys.exit(f"{name}: gpubench wrote no results in {folder}")
            found[name].append(medians(folder))
    print("| condition | runs | points | each run's shift, % | range, pp | per-point spread "
          "(median / p90) |\n|---|---:|---:|---|---:|---|")
    for name, runs in found.items():
        report(name, runs)


if __name__ == "__main__":
    main()

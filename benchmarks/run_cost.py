"""What a change to the harness costs a run: the same `gpubench run` by two gpubench trees,
interleaved, and their wall times side by side.

Issue 50's bar: the README's GPU run (`gpubench run matmul --sizes 1024,4096`) within 10%
of its wall time before the judge's changes. Runs alternate (base, new, base, new, ...) so
that a drift of the machine (clocks, a cache filling) lands on both sides; the first pair
also fills the build cache both trees share (same kernels, same cache key), and is left out.

    git archive REV | tar -x -C .base        # the tree before the change
    python benchmarks/run_cost.py --base .base --pairs 3 -- matmul --sizes 1024,4096

Prints one row per run and the median of each side with their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed_run(tree: Path, args: list[str], out: Path) -> tuple[float, int]:
    """(wall seconds, exit code) of `python -m gpubench run ARGS` with `tree`'s gpubench."""
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "160"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", *args, "--out", str(out)],
                          cwd=out.parent, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--pairs", type=int, default=3, help="measured pairs (after one warm-up)")
    parser.add_argument("run_args", nargs="+", help="gpubench run's arguments (after --)")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "new": REPO}
    walls: dict[str, list[float]] = {"base": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="gpubench-run-cost-") as scratch:
        for pair in range(args.pairs + 1):
            for name, tree in sides.items():
                out = Path(scratch) / f"{name}-{pair}"
                wall, code = timed_run(tree, args.run_args, out)
                kept = pair > 0
                print(f"{name:4} run {pair}: {wall:7.2f} s, exit {code}"
                      f"{'' if kept else ' (warm-up: fills the build cache, left out)'}",
                      flush=True)
                if kept:
                    walls[name].append(wall)
    base, new = (statistics.median(walls[k]) for k in ("base", "new"))
    print(f"median wall: base {base:.2f} s, new {new:.2f} s, new/base {new / base:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a change to the harness costs a run: the same `gpubench run` by two gpubench trees,
interleaved, and their wall times side by side.

Issue 50's bar: the README's GPU run (`gpubench run matmul --sizes 1024,4096`) within 10%
of its wall time before the judge's changes. Runs alternate (base, new, base, new, ...) so
that a drift of the machine (clocks, a cache filling) lands on both sides; the first pair
also fills the build cache both trees share (same kernels, same cache key), and is left out.

    git archive REV | tar -x -C .base        # the tree before the change
    python benchmarks/run_cost.py --base .base --pairs 3 -- matmul --sizes 1024,4096

Prints one row per run, the median of each side with their ratio, and where the time went:
each task's time in the worker (from the worker logs' task lines), base against new.
"""

from __future__ import annotations

import argparse
import os
import re
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


# "[gpubench worker] 20:07:00.341 task 0: family/variant/shape/dtype" and "... task 0 done"
TASK_LINE = re.compile(r"(\d\d):(\d\d):(\d\d\.\d+) task (\d+)(?:: (\S+)| done)")


def task_seconds(run_dir: Path) -> dict[str, float]:
    """Seconds each task took in the worker, by its label, from the run's worker logs."""
    started: dict[str, tuple[str, float]] = {}
    took: dict[str, float] = {}
    for log in sorted(run_dir.glob("worker-*.log")):
        for match in TASK_LINE.finditer(log.read_text(errors="replace")):
            hours, minutes, seconds, task, label = match.groups()
            at = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
            if label:
                started[task] = (label, at)
            elif task in started:
                name, begun = started.pop(task)
                took[name] = took.get(name, 0.0) + at - begun
    return took


def print_tasks(runs: dict[str, list[Path]]) -> None:
    per_side = {side: [task_seconds(d) for d in dirs] for side, dirs in runs.items()}
    labels = sorted({label for found in per_side["new"] for label in found})
    print(f"{'task':60} {'base s':>8} {'new s':>8} {'new-base':>9}")
    for label in labels:
        base, new = ([f.get(label, float("nan")) for f in per_side[k]] for k in ("base", "new"))
        b, n = statistics.median(base), statistics.median(new)
        print(f"{label[:60]:60} {b:8.3f} {n:8.3f} {n - b:+9.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--pairs", type=int, default=3, help="measured pairs (after one warm-up)")
    parser.add_argument("--keep", type=Path, help="keep the run folders here")
    parser.add_argument("run_args", nargs="+", help="gpubench run's arguments (after --)")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "new": REPO}
    walls: dict[str, list[float]] = {"base": [], "new": []}
    kept: dict[str, list[Path]] = {"base": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="gpubench-run-cost-") as scratch:
        root = args.keep.resolve() if args.keep else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        for pair in range(args.pairs + 1):
            for name, tree in sides.items():
                out = root / f"{name}-{pair}"
                wall, code = timed_run(tree, args.run_args, out)
                note = "" if pair else " (warm-up: fills the build cache, left out)"
                print(f"{name:4} run {pair}: {wall:7.2f} s, exit {code}{note}", flush=True)
                if pair:
                    walls[name].append(wall)
                    kept[name].append(out)
        base, new = (statistics.median(walls[k]) for k in ("base", "new"))
        print(f"median wall: base {base:.2f} s, new {new:.2f} s, new/base {new / base:.3f}")
        print_tasks(kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How far a fresh process moves each point, and what `compare` says of unchanged code.

    python benchmarks/process_spread.py [--runs 7] [--out process-spread] [-- RUN ARGS]
    python benchmarks/process_spread.py --out FOLDER --table-only

Runs `gpubench run` RUNS times, each in a fresh process, with the same arguments (default:
configs/process-spread.toml, variants wmma, torch and block_reduce), into OUT/run1..runN,
then prints, per point: the median over the runs, the standard deviation of the runs' log
medians (what a fresh process moves it by), the samples' median IQR and the bootstrap CI's
median width (what one run sees of its own noise). Then how often `compare` calls
unchanged code FASTER or SLOWER with one, two and three runs a side (every disjoint
choice of runs, up to 200 a row), the number behind docs/measurement.md "Between
processes". --table-only reads the runs already in OUT.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

from gpubench.analysis.comparison import FASTER, SLOWER, compare_runs
from gpubench.store.folder import read_run

DEFAULT_RUN = ["--config", "configs/process-spread.toml", "--variants", "wmma,torch,block_reduce"]
# Disjoint choices of runs compared per row: 7 runs give 105 choices of 2 + 2, 140 of
# 3 + 3; 200 keeps a row under a few seconds on the CPU machine.
MAX_CHOICES = 200


def make_runs(out: Path, count: int, arguments: list[str]) -> None:
    for index in range(1, count + 1):
        folder = out / f"run{index}"
        command = [sys.executable, "-m", "gpubench", "run", *arguments, "--out", str(folder),
                   "--force"]
        code = subprocess.call(command, stdout=subprocess.DEVNULL)
        print(f"run{index}: exit {code}", flush=True)


def point_rows(runs: list) -> list[list[str]]:
    """Per point passed in every run: median, between-process sd, IQR, CI width."""
    by_key: dict[str, list] = {}
    for run in runs:
        for result in run.results:
            if result.passed and result.median_s:
                by_key.setdefault(result.key.text(), []).append(result)
    rows = []
    for key, results in by_key.items():
        if len(results) < max(len(runs), 2):
            continue
        logs = [math.log(r.median_s) for r in results]
        iqr = statistics.median(r.summary.iqr / r.median_s for r in results)
        ci = statistics.median((r.summary.ci_high - r.summary.ci_low) / r.median_s
                               for r in results)
        rows.append([key, f"{statistics.median(r.median_s for r in results) * 1e6:.2f}",
                     f"{100 * statistics.stdev(logs):.1f}%",
                     f"{100 * (max(logs) - min(logs)):.1f}%", f"{100 * iqr:.1f}%",
                     f"{100 * ci:.1f}%"])
    return rows


def false_verdict_rows(runs: list, rng: random.Random) -> list[list[str]]:
    """FASTER/SLOWER among unchanged runs, k runs a side, over disjoint choices."""
    rows = []
    for side in (1, 2, 3):
        if 2 * side > len(runs):
            break
        choices = list(itertools.permutations(range(len(runs)), 2 * side))
        choices = rng.sample(choices, min(MAX_CHOICES, len(choices)))
        counts: Counter = Counter()
        for choice in choices:
            base, new = [runs[i] for i in choice[:side]], [runs[i] for i in choice[side:]]
            result = compare_runs(base[0], new[0], base_repeats=base[1:], new_repeats=new[1:])
            counts.update(p.verdict for p in result.points if p.comparison)
        total = sum(counts.values())
        wrong = counts[FASTER] + counts[SLOWER]
        rows.append([f"{side} a side", str(len(choices)), str(total),
                     f"{wrong} ({100 * wrong / max(total, 1):.1f}%)",
                     f"{counts['SAME']}", f"{counts['UNSURE']}"])
    return rows


def print_table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", default="process-spread")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("extra", nargs="*", help="after --: the `gpubench run` arguments")
    options = parser.parse_args()
    out = Path(options.out)
    if not options.table_only:
        make_runs(out, options.runs, options.extra or DEFAULT_RUN)
    folders = sorted((p for p in out.glob("run*") if (p / "results.json").exists()),
                     key=lambda p: int(p.name[3:]) if p.name[3:].isdigit() else 0)
    runs = [read_run(folder) for folder in folders]
    if len(runs) < 2:
        print(f"{out}: {len(runs)} run(s) with results: two at least are needed")
        return 1
    print(f"{len(runs)} runs of unchanged code in {out}\n")
    print_table(["point", "median us", "sd between processes", "range", "IQR (median)",
                 "CI width (median)"], point_rows(runs))
    print_table(["runs", "choices", "verdicts", "FASTER or SLOWER", "SAME", "UNSURE"],
                false_verdict_rows(runs, random.Random(0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

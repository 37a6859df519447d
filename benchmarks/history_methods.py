"""Which change-point method `gpubench history` uses, chosen on measured run-to-run noise.

    python benchmarks/history_methods.py RUNS_FOLDER [--change-at 13] [--trials 400]

RUNS_FOLDER holds run folders of one nightly series (benchmarks/history_series.py's
`runs/`, recorded on a GPU), where `planted` stepped at night CHANGE_AT and every other
variant never did. Two tables:

1. **The measured series** as they are: per method, the change points found in the
   unchanged series (false) and whether the planted series' step was found at its run
   (missed otherwise).
2. **Resampled**: series of the same length drawn from the measured noise (an unchanged
   series' residuals about its median, in blocks of 4 consecutive runs), with a step of 1%,
   2% or 5% planted at a random run (at least 6 from either end), TRIALS each: the share
   of steps found within one run of where they are, and false change points per series.

Methods: PELT and binary segmentation (ruptures) with an l2 or l1 cost, each with or
without the gate gpubench puts on a candidate (Mann-Whitney p < 0.05 and its Hodges-
Lehmann CI beyond +-1%). Runs on the CPU machine: the figures are the GPU's noise.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path

import numpy as np

from gpubench.analysis import change_points as cp
from gpubench.analysis.history import build_series
from gpubench.records.series import history_rows
from gpubench.store.folder import read_run


def binseg(signal, penalty, model="l2"):
    import ruptures

    found = ruptures.Binseg(model=model, min_size=cp.MIN_SEGMENT, jump=1).fit(
        np.asarray(signal).reshape(-1, 1)).predict(pen=penalty * math.log(len(signal)))
    return [int(b) for b in found if b < len(signal)]


def ungated(medians, search, penalty=cp.PENALTY):
    """The search's candidates as change points, without the rank test or the bar."""
    logs = [math.log(m) for m in medians]
    if len(logs) < 2 * cp.MIN_SEGMENT:
        return []
    return [cp.ChangePoint(i, math.nan, math.nan, math.nan, 0.0, 0, 0)
            for i in search(cp.scaled(logs), penalty)]


METHODS = {
    "PELT l2 + gate (gpubench)": partial(cp.change_points),
    "PELT l1 + gate": partial(cp.change_points, search=partial(cp.pelt, model="l1")),
    "Binseg l2 + gate": partial(cp.change_points, search=binseg),
    "PELT l2, no gate": partial(ungated, search=cp.pelt),
    "Binseg l2, no gate": partial(ungated, search=binseg),
}


BLOCK = 4  # runs: a GPU's slower stretches last a few runs; whole blocks keep them


def block_resample(pool: list[float], n: int, rng: random.Random) -> list[float]:
    """A moving-block bootstrap of one series' residuals: blocks of BLOCK consecutive
    runs, drawn with replacement, so the noise keeps its stretches (i.i.d. draws would
    scatter them, and flatter every method)."""
    out: list[float] = []
    while len(out) < n:
        start = rng.randrange(len(pool) - BLOCK + 1)
        out += pool[start:start + BLOCK]
    return out[:n]


def measured_series(folder: Path):
    rows = []
    for run in sorted(p for p in folder.iterdir() if (p / "results.json").is_file()):
        rows += history_rows(read_run(run), str(run))
    return [s for s in build_series(rows) if len(s.timed) >= 2 * cp.MIN_SEGMENT]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--change-at", type=int, default=13, help="night of the step (1-based)")
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=54)
    args = parser.parse_args()
    series = measured_series(args.runs)
    planted = [s for s in series if s.first.variant == "planted"]
    steady = [s for s in series if s.first.variant != "planted"]
    step = args.change_at - 1  # the index of the first slower run
    print(f"{len(series)} series of {len(series[0].timed)} runs: {len(planted)} planted "
          f"(step at run {args.change_at}), {len(steady)} unchanged")
    noises = [cp.noise_scale([math.log(r.median_s) for r in s.timed]) for s in steady]
    print(f"run-to-run noise of the unchanged series (MAD of successive differences): "
          f"{min(noises):.2%} to {max(noises):.2%}, median {sorted(noises)[len(noises) // 2]:.2%}")
    print("\n| method | unchanged: false change points | planted: found at its run | "
          "planted: other change points |\n|---|---|---|---|")
    for name, method in METHODS.items():
        false = sum(len(method([r.median_s for r in s.timed])) for s in steady)
        found = [method([r.median_s for r in s.timed]) for s in planted]
        hits = sum(any(abs(c.index - step) <= 1 for c in f) for f in found)
        others = sum(sum(abs(c.index - step) > 1 for c in f) for f in found)
        print(f"| {name} | {false} in {len(steady)} series | {hits} of {len(planted)} | "
              f"{others} |")
    pools = [[math.log(r.median_s) - float(np.median([math.log(x.median_s) for x in s.timed]))
              for r in s.timed] for s in steady]
    n = len(series[0].timed)
    if n < 12:
        print(f"\n{n} runs a series: too few to plant a step 6 runs from either end")
        return 0
    rng = random.Random(args.seed)
    table = defaultdict(dict)
    for pct in (0, 1, 2, 5):
        draws = []
        for _ in range(args.trials):
            pool = rng.choice(pools)
            at = rng.randrange(6, n - 5)
            noise = block_resample(pool, n, rng)
            draws.append((at, [math.exp(noise[i] + (math.log1p(pct / 100) if i >= at else 0.0))
                               for i in range(n)]))
        for name, method in METHODS.items():
            hit = false = 0
            for at, values in draws:
                found = method([v * 1e-5 for v in values])
                hit += any(abs(c.index - at) <= 1 for c in found)
                false += sum(abs(c.index - at) > 1 for c in found) if pct else len(found)
            table[name][pct] = (hit / len(draws), false / len(draws))
    print(f"\nResampled measured noise, {n} runs a series, {args.trials} series per column: "
          "found within one run of the step / false change points per series\n")
    print("| method | no step: false | +1%: found / false | +2%: found / false | "
          "+5%: found / false |\n|---|---|---|---|---|")
    for name, by_pct in table.items():
        cells = [f"{by_pct[0][1]:.3f}"] + [f"{by_pct[p][0]:.0%} / {by_pct[p][1]:.3f}"
                                           for p in (1, 2, 5)]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

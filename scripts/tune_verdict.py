"""Issue 31's acceptance figures from `gpubench tune` records (scripts/gpu-acceptance.sh tune):

    python3 scripts/tune_verdict.py EXHAUSTIVE RACE [RACE ...]

For each racing record: its pick, that pick's median in the exhaustive record against the
exhaustive record's fastest (target: within 2%), and the racing run's timing and wall
time against the exhaustive run's (target: <= 1/3). Then whether the racing picks agree
or are tied. Exit 1 when a pick is off by more than 2%."""

from __future__ import annotations

import sys

from gpubench.store.folder import read_run
from gpubench.timing.stats import quantile
from gpubench.tune.summary import samples_by_label

WITHIN = 0.02  # the bar: the racing pick within 2% of the exhaustive best


def median(samples) -> float:
    return quantile(sorted(samples), 0.5)


def main(exhaustive_dir: str, *race_dirs: str) -> int:
    full = read_run(exhaustive_dir)
    times = {label: median(s) for label, s in samples_by_label(full).items()}
    best_label = min(times, key=times.get)
    tune = full.meta["tune"]
    print(f"exhaustive: best {best_label} at {times[best_label] * 1e6:.2f} us; timing "
          f"{tune['timing_s']:.1f} s, wall {full.meta['wall_s']:.1f} s")
    failed, picks = False, []
    for folder in race_dirs:
        race = read_run(folder)
        meta = race.meta["tune"]
        pick = meta["best_label"]
        picks.append((pick, meta))
        off = times[pick] / times[best_label] - 1 if pick in times else float("nan")
        ok = off <= WITHIN
        failed |= not ok
        print(f"racing {folder}: pick {pick}; in the exhaustive run {off * 100:+.2f}% of its "
              f"best ({'within' if ok else 'NOT within'} 2%); timing {meta['timing_s']:.1f} s "
              f"= {meta['timing_s'] / tune['timing_s']:.2f} of exhaustive, wall "
              f"{race.meta['wall_s']:.1f} s = {race.meta['wall_s'] / full.meta['wall_s']:.2f}")
    if len(picks) >= 2:
        (first, _), (second, meta) = picks[0], picks[1]
        said = "the same" if first == second else (
            "tied" if first in meta["tied_labels"] else "NOT tied")
        print(f"the two racing picks: {first} / {second}: {said}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

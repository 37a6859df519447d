"""How far each run of benchmarks/scale_out.py moved the launch-bound points (issue 32).

    python3 scripts/launch_bound_shift.py OUT [OUT ...]

OUT is a scale-out output folder (`--out`, or `logs/scale-out` unpacked from a device
run's logs.tgz), holding 1gpu-cold/, 1gpu-warm/, all-cold/ ... For each run other than
1gpu-cold it prints the median over points of (this run's median / 1gpu-cold's - 1), for
the points under 10 us on one GPU (launch-bound: the host's launches set their time) and
for the rest, PASS-alike points present in both. A second one-GPU run (1gpu-warm) shows
how far an unchanged process moves them: the bar the parallel runs are read against.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

RUNS = ("1gpu-warm", "all-cold", "dask-cold", "all-warm", "dask-warm")
# Under 10 us a kernel's time is mostly its launch's (a few us on an H200 host).
LAUNCH_BOUND_S = 10e-6


def medians(folder: Path) -> dict[str, float]:
    """{point key: median seconds} of a run's measured points (gpubench.load_run)."""
    import gpubench
    from gpubench.records.result import OK

    return {key: result.median_s for key, result in gpubench.load_run(str(folder)).by_key().items()
            if result.status == OK and result.median_s}


def shifts(base: dict, run: dict) -> tuple[list[float], list[float]]:
    """(launch-bound shifts, the others'), as run / base - 1."""
    small, large = [], []
    for key, seconds in base.items():
        if key in run:
            (small if seconds < LAUNCH_BOUND_S else large).append(run[key] / seconds - 1)
    return small, large


def main(outs: list[str]) -> None:
    print("| out | run | points < 10 us | points >= 10 us |\n|---|---|---:|---:|")
    from gpubench.safe_text import markdown

    for out in map(Path, outs):
        shown = markdown(out)  # a folder name is the user's text: escaped in the table
        if not (out / "1gpu-cold" / "results.json").exists():
            print(f"| {shown} | no 1gpu-cold/results.json there: skipped | | |")
            continue
        base = medians(out / "1gpu-cold")
        for name in RUNS:
            if not (out / name / "results.json").exists():
                continue
            small, large = shifts(base, medians(out / name))
            if small and large:
                print(f"| {shown} | {name} | {statistics.median(small) * 100:+.1f}% "
                      f"(n={len(small)}) | {statistics.median(large) * 100:+.1f}% "
                      f"(n={len(large)}) |")


if __name__ == "__main__":
    main(sys.argv[1:])

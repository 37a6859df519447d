"""Issue 54's measurement: a nightly series on a GPU, a planted slowdown at a known run.

    python3 benchmarks/history_series.py [--runs 24] [--change-at 13] [--pct 2]
                                         [--sizes 2^24,...] [--out DIR]

Writes benchmarks/ab_power.py's family `planted` (out = 2 x; `torch` and `steady`
unchanged, `planted` slowed by PCT%: more memory traffic, or a longer spin of its last
block, `--plant`) into a git
repository, then for each of RUNS nights: commits (a NOTES line each night; from night
CHANGE_AT the planted version), and runs `gpubench run planted` in a process of its
own (the real run-to-run noise: a fresh process, allocator, clocks). Every run records
its commit; the store and the index of runs are the --out folder's own.

Then `gpubench history planted`, and a table of what it found: per series, the change
points (run, size, CI) against the truth: `planted` from night CHANGE_AT, the rest never.
The runs' folders stay under --out for `gpubench history` elsewhere (the CPU machine).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ab_power import PLANTS, Plant, medians_ns, sm_clock_mhz, write_family  # a sibling

REPO = Path(__file__).resolve().parent.parent
SIZES = "2^24,2^25,2^26,100663296"  # 50-300 us: where +2% traffic is +2.0% time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--change-at", type=int, default=13, help="the first slower night")
    parser.add_argument("--pct", type=int, default=2)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--plant", choices=sorted(PLANTS), default="traffic",
                        help="traffic: PCT%% more elements written again (the time moves by "
                             "2-3%% for 2%% at 50-300 us: a grid-stride loop's iterations are "
                             "whole); spin: the last block spins PCT%% of the kernel's time, "
                             "fitted on a first run of the unplanted version")
    parser.add_argument("--out", type=Path, default=REPO / "profiles" / "history-series")
    parser.add_argument("extra", nargs="*", help="options for every run (after --)")
    args = parser.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    repo = out / "repo"
    repo.mkdir(parents=True)
    env = {**os.environ, "GPUBENCH_RUN_INDEX": str(out / "runs.json")}
    git = ["git", "-C", str(repo), "-c", "user.name=nightly", "-c", "user.email=n@n"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    walls = []
    plant = Plant(args.plant)
    if args.plant == "spin":  # the unplanted kernel's medians, for the spin's length
        write_family(repo, 0, plant)
        subprocess.run([sys.executable, "-m", "gpubench", "run", "planted", "--kernels-dir",
                        str(repo), "--sizes", args.sizes, "--no-compiled", "--out",
                        str(out / "fit")], capture_output=True, text=True, cwd=REPO,
                       env={**env, "GPUBENCH_RUN_INDEX": str(out / "fit-runs.json")})
        plant = Plant("spin", medians_ns(out / "fit"), sm_clock_mhz())
        print(f"plant: {plant}", flush=True)
    for night in range(1, args.runs + 1):
        pct = args.pct if night >= args.change_at else 0
        write_family(repo, pct, plant)
        (repo / "NOTES").write_text(f"night {night}\n")
        subprocess.run([*git, "add", "."], check=True)
        subprocess.run([*git, "commit", "-qm", f"night {night}" +
                        (f": planted +{pct}%" if night == args.change_at else "")],
                       check=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "gpubench", "run", "planted",
                               "--kernels-dir", str(repo), "--sizes", args.sizes,
                               "--no-compiled", "--out", str(out / "runs" / f"night{night:02d}"),
                               *args.extra], capture_output=True, text=True, env=env, cwd=REPO)
        walls.append(time.perf_counter() - start)
        (out / f"night{night:02d}.log").write_text(done.stdout + done.stderr)
        print(f"night {night:2d}: exit {done.returncode}, {walls[-1]:.1f} s"
              + (f", planted +{pct}%" if pct else ""), flush=True)
    history = subprocess.run([sys.executable, "-m", "gpubench", "history", "planted",
                              "--last", "30", "--markdown", str(out / "history.md"),
                              "--html", str(out / "history.html")],
                             capture_output=True, text=True, env=env, cwd=REPO)
    print(history.stdout[-6000:] + history.stderr[-2000:])
    print(f"runs: {len(walls)}, wall per run {min(walls):.1f}-{max(walls):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

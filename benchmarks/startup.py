"""Where a run's fixed cost goes: the start-up chain of `gpubench run`, step by step.

    python benchmarks/startup.py [--repeat 3] [--suite "vector_add --sizes 2^20"]
                                 [--parallel] [--cluster] [--profile FILE]

Every row is a fresh process, the median of --repeat:
  python -c pass           the interpreter alone
  import torch             Python and torch
  torch + CUDA context     the above and a context on the default device
  import triton
  worker hello             a gpubench worker started the way a run starts one
                           (WorkerProcess.start): Python, torch, the device's facts (the
                           CUDA context), the cached ceilings' check; its log's own split
  gpubench run             --suite, run once to fill the caches, then timed: the command's
                           wall, gpubench's own clock (meta wall_s), its clock's start to
                           the first point handed out (startup_s), the points' span, the
                           rest (the last saves); "outside" is the command's wall less
                           gpubench's: Python, imports, planning and the wait for the
                           prestarted worker's hello before its clock, stopping workers
                           (and a cluster) after it
With --parallel the run again with --devices all (the interference reference counts in
its start), with --cluster with --cluster local. --profile FILE: the parent of the last
timed run under cProfile (pstats file; the top of gpubench's own functions is printed).
A scale-out speedup is (F + W) / (F_N + W / N) for fixed costs F: these are the F.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpubench.run.lanes.worker_process import WorkerProcess
from gpubench.run.worker.process import START_LINE

# The parent under cProfile: dumped from an atexit handler, since gpubench ends with
# os._exit once its atexit handlers ran (cli.main), which a plain `-m cProfile` misses.
PROFILED = """
import atexit, cProfile, sys
profile = cProfile.Profile()
atexit.register(lambda: (profile.disable(), profile.dump_stats({out!r})))
profile.enable()
from gpubench.cli import main
sys.argv = ["gpubench", *sys.argv[1:]]
main()
"""


def wall_of(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_wall(code: str, repeat: int) -> float:
    return statistics.median(wall_of([sys.executable, "-c", code]) for _ in range(repeat))


def worker_hello(device: str, repeat: int) -> tuple[float, str]:
    """Seconds from a worker's start to its hello (median), and its log's own split."""
    walls, split = [], ""
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "worker.log"
            worker = WorkerProcess(device, log)
            start = time.perf_counter()
            worker.start()
            walls.append(time.perf_counter() - start)
            worker.stop()
            lines = [line for line in log.read_text().splitlines() if START_LINE in line]
            split = lines[0].split(START_LINE, 1)[1].strip() if lines else "(no start line)"
    return statistics.median(walls), split


def timed_run(suite: list[str], extra: list[str], out: Path, repeat: int,
              profile: Path | None) -> dict:
    """The run's figures: median command wall and the median of each of its own."""
    command = [sys.executable, "-m", "gpubench", "run", *suite, *extra, "--out", str(out),
               "--force"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # caches filled
    rows = []
    for index in range(repeat):
        if profile is not None and index == repeat - 1:
            argv = [sys.executable, "-c", PROFILED.format(out=str(profile)), *command[3:]]
        else:
            argv = command
        wall = wall_of(argv)
        meta = json.loads((out / "results.json").read_text())["meta"]
        rows.append({"wall": wall, "own": meta["wall_s"], "startup": meta.get("startup_s", 0),
                     "span": meta.get("points_span_s", 0)})
    middle = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
    middle["outside"] = middle["wall"] - middle["own"]
    middle["after"] = middle["own"] - middle["startup"] - middle["span"]
    return middle


def print_profile(path: Path, top: int = 25) -> None:
    import io
    import pstats

    text = io.StringIO()
    pstats.Stats(str(path), stream=text).sort_stats("cumulative").print_stats("gpubench", top)
    print(text.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--suite", default="vector_add --sizes 2^20 --variants torch",
                        help="what `gpubench run` runs (its arguments)")
    parser.add_argument("--parallel", action="store_true", help="also with --devices all")
    parser.add_argument("--cluster", action="store_true", help="also with --cluster local")
    parser.add_argument("--profile", type=Path, help="cProfile the last run's parent")
    args = parser.parse_args()
    import torch

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    rows = [("python -c pass", median_wall("pass", args.repeat), "")]
    rows.append(("import torch", median_wall("import torch", args.repeat), ""))
    if cuda:
        rows.append(("torch + CUDA context",
                     median_wall("import torch; torch.zeros(1, device='cuda')", args.repeat),
                     ""))
    rows.append(("import triton", median_wall("import triton", args.repeat), ""))
    hello, split = worker_hello(device, args.repeat)
    rows.append(("worker hello", hello, split))
    print_rows(rows)
    suite = shlex.split(args.suite)
    kinds = [("one worker", [])]
    if args.parallel:
        kinds.append(("--devices all" if cuda else "--workers 2",
                      ["--devices", "all"] if cuda else ["--workers", "2"]))
    if args.cluster:
        kinds.append(("--cluster local", ["--cluster", "local"]))
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for index, (name, extra) in enumerate(kinds):
            profile = args.profile if index == len(kinds) - 1 else None
            figures = timed_run(suite, extra, Path(folder) / f"run{index}", args.repeat,
                                profile)
            runs.append((name, figures))
    print()
    print_runs(runs)
    if args.profile is not None:
        print()
        print_profile(args.profile)
    return 0


def print_rows(rows: list[tuple[str, float, str]]) -> None:
    print(f"{'process':24}  {'s':>6}  split")
    for name, seconds, split in rows:
        print(f"{name:24}  {seconds:6.2f}  {split}")


def print_runs(runs: list[tuple[str, dict]]) -> None:
    columns = ("wall", "outside", "startup", "span", "after")
    print(f"{'gpubench run':18}  " + "  ".join(f"{c:>8}" for c in columns))
    for name, figures in runs:
        print(f"{name:18}  " + "  ".join(f"{figures[c]:8.2f}" for c in columns))


if __name__ == "__main__":
    sys.exit(main())

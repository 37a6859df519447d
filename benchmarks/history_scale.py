"""Issue 61's measurement: `gpubench history` over a large store. On any machine (CPU):

    python3 benchmarks/history_scale.py [--rows 1000000] [--families 50] [--variants 20]
                                        [--shapes 5] [--family fam007] [--keep DIR]

Builds a synthetic store of ROWS rows in a temporary folder: FAMILIES x VARIANTS x SHAPES
series, ROWS / (that) runs each, through the store's own schema (history_store.connect)
and row encoding (HistoryRow, the store's column order), one bulk insert. Each run has a
folder with a results.json, recorded in an index of runs of its own ($GPUBENCH_RUN_INDEX)
and in the store's table of folders with its size and mtime, so `history`'s sync finds
every folder up to date and reads nothing again. One series in ten steps 5% slower at
two thirds of its runs, so the change-point search has something to find.

Then times, each as a subprocess (stdout to /dev/null, stderr kept), `gpubench history
FAMILY` and `gpubench history` (all families), with the peak RSS of that child
(os.wait4's rusage: ru_maxrss of that one process, as RUSAGE_CHILDREN would give after it
alone), and prints a table: rows, command, seconds, peak MB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpubench.records.series import HistoryRow  # noqa: E402
from gpubench.store import history_store  # noqa: E402

DAY = 86400.0
START = 1.7e9  # 2023-11: a run a day from here


def build_store(root: Path, rows: int, families: int, variants: int, shapes: int) -> int:
    """The store and index under `root`; the number of rows written."""
    series = families * variants * shapes
    runs = max(1, rows // series)
    index, folders = [], []
    for run in range(runs):
        folder = root / "runs" / f"run{run:05d}"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}\n")  # history reads the store, not this
        stat = (folder / "results.json").stat()
        index.append({"path": str(folder.resolve()), "started": START + run * DAY,
                      "command": "gpubench run", "cwd": str(root)})
        folders.append((str(folder.resolve()), stat.st_size, stat.st_mtime))
    (root / "runs.json").write_text(json.dumps({"schema": 1, "runs": index}) + "\n")
    db = history_store.connect(root / history_store.STORE_NAME)
    insert = f"INSERT INTO rows VALUES ({', '.join('?' * len(history_store.COLUMNS))})"
    written = 0
    with db:
        db.executemany("INSERT INTO folders VALUES (?, ?, ?)", folders)
        for run, (run_dir, _, _) in enumerate(folders):
            db.executemany(insert, _run_rows(run, run_dir, runs, families, variants, shapes))
            written += series
    db.execute("ANALYZE")
    db.close()
    return written


def _run_rows(run: int, run_dir: str, runs: int, families: int, variants: int,
              shapes: int):
    rng = random.Random(run)
    commit = f"{run:07x}" + "0" * 33
    for f in range(families):
        for v in range(variants):
            for s in range(shapes):
                base = 1e-5 * (1 + s) * (1 + v / 10)
                step = 1.05 if (f + v + s) % 10 == 0 and run >= 2 * runs // 3 else 1.0
                median = base * step * (1 + rng.gauss(0, 0.003))
                row = HistoryRow(
                    run_dir=run_dir, run_id=f"run{run:05d}", started=START + run * DAY,
                    family=f"fam{f:03d}", variant=f"var{v:02d}", dtype="float32",
                    shape=f"n={2 ** (16 + s)}", mode="cold", status="ok", median_s=median,
                    ci_low_s=median * 0.99, ci_high_s=median * 1.01, gpu="NVIDIA H200",
                    method="events, L2 flushed", commit=commit, changed=commit,
                    subject=f"night {run}", gpubench_commit="f" * 40)
                yield history_store._values(row)


def timed(args: list[str], env: dict) -> tuple[float, float, int, str]:
    """(seconds, peak RSS in MB, exit status, stderr's tail) of one child."""
    begin = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - begin
        err.seek(0)
        tail = err.read().decode(errors="replace")[-300:]
    return seconds, usage.ru_maxrss / 1024, child.returncode, tail  # Linux: KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--families", type=int, default=50)
    parser.add_argument("--variants", type=int, default=20)
    parser.add_argument("--shapes", type=int, default=5)
    parser.add_argument("--family", default="fam007")
    parser.add_argument("--only-family", action="store_true", help="skip the all-families run")
    parser.add_argument("--keep", type=Path,
                        help="build the store here and keep it (a store there is reused)")
    options = parser.parse_args()
    root = options.keep or Path(tempfile.mkdtemp(prefix="history_scale_"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        begin = time.perf_counter()
        if options.keep and (root / history_store.STORE_NAME).exists():  # built before
            with sqlite3.connect(root / history_store.STORE_NAME) as db:
                rows = db.execute("SELECT count(*) FROM rows").fetchone()[0]
            print(f"reusing {rows} rows: {root}")
        else:
            rows = build_store(root, options.rows, options.families, options.variants,
                               options.shapes)
            print(f"built {rows} rows in {time.perf_counter() - begin:.1f} s: {root}")
        env = {**os.environ, "GPUBENCH_RUN_INDEX": str(root / "runs.json"),
               "PYTHONPATH": str(REPO)}
        commands = [["history", options.family]]
        if not options.only_family:
            commands.append(["history"])
        print(f"{'rows':>9}  {'command':<28} {'seconds':>8} {'peak MB':>8}  exit")
        for command in commands:
            seconds, peak, code, tail = timed(
                [sys.executable, "-m", "gpubench", *command], env)
            print(f"{rows:>9}  {'gpubench ' + ' '.join(command):<28} {seconds:>8.1f} "
                  f"{peak:>8.0f}  {code}", flush=True)
            if code:
                print(f"  stderr: {tail}")
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

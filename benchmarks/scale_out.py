"""Scale-out benchmark: one suite on one GPU, on every GPU (--devices all), through Dask.

    python benchmarks/scale_out.py [--config configs/gpu-full.toml] [--out DIR]
                                   [--cpu-workers N] [--skip-cluster]

Runs the suite in these ways, each with a build cache of its own (GPUBENCH_CACHE_DIR,
TRITON_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR), so that "cold" runs compile everything
and "warm" ones find their own builds:
  1gpu-cold, all-cold (--devices all), dask-cold (--cluster local),
  1gpu-warm, all-warm, dask-warm.
On a machine without a GPU the same with --workers N (CPU workers) instead.
Then prints one table: the command's wall time (the whole process: Python's start,
planning, workers, saving) and its speedup against one GPU (cold against cold, warm
against warm); the fixed cost (that wall time less the span from the first point
handed to a worker to the last one back: starts, the interference reference, saving);
the build phase's wall time, compile seconds and parallelism; whether every point has
the same status as on one GPU; how many medians fall inside the one-GPU run's 95% CI;
`gpubench compare`'s verdicts against the one-GPU run and the spread of the ratios
behind them (median and 90th percentile of |run / one GPU - 1|); and the interference figure
each parallel run measured. For reference, 1gpu-warm is compared with 1gpu-cold too:
that is how much two sequential runs on one GPU differ, the bar the parallel runs are
held to. The last two columns hold a parallel run to that bar point by point: for each
point, how much further its median lies from 1gpu-cold's than 1gpu-warm's does (|log
ratio|, in percentage points), the median of that excess, and the one-sided p of Wilcoxon's
signed-rank test that the parallel run lies further (p < 0.05: measurably further than a
sequential rerun), over the points whose autotune pick moved in neither run (moved_keys);
the last the same with each |log ratio| taken beyond its group's common
shift, as `gpubench compare` allows for it (beyond_group). Each worker process moves its
short kernels by its own few percent: one rerun is one such draw against a parallel run's
several, so the first of the two flags a run whenever the rerun's draw lands near
1gpu-cold's, while the variants of a group, measured in one process, share it.
EXTRA arguments after `--` go to every run (e.g. `-- --no-compiled`).

"Cold" empties what a run builds (C++/CUDA extensions, Triton's and Inductor's caches),
not what gpubench knows of the machine: the GPU's measured ceilings (`gpubench peak`, the
roofline's bandwidth and FLOP/s) are measured once first and copied into each cold cache,
and Python's bytecode, where gpubench caches it (build/bytecode.py), is shared by all runs
(that `gpubench peak` fills it, and an import of Dask where the Dask rows run), as a Python
install's own __pycache__ would be.
Without that, every worker of a cold run measured them at its start, a few seconds
before its first point (3.4 s of the parent's wait on the CPU machine, 2026-11-27);
--cold-ceilings puts that back. The interference reference (run/interference/cache.py: how
the GPUs slow each other, kept an hour per set of GPUs) is knowledge of the machine too:
it is measured once first, by a one-point run on every GPU (and one through Dask), and
copied into each cold cache; the cold runs then say they reused it. Measured in each cold
run, it held every lane 2.4 s before the first point on 4 H200s (2026-11-27, 28th run);
--cold-interference puts that back.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gpubench
from gpubench.analysis.comparison import FASTER, SLOWER, GroupShift, compare_runs, group_shifts
from gpubench.analysis.config_change import autotune_moved
from gpubench.report.compare_view import counts_text
from gpubench.timing.stats import median_ci_order, signed_rank_p_greater


def cache_env(cache: Path) -> dict:
    """A run's caches under `cache`; Python's bytecode (build/bytecode.py, where the
    environment turned it off) shared by every run beside it: it is the interpreter's
    state, not the run's builds."""
    return {**os.environ, "GPUBENCH_CACHE_DIR": str(cache / "gpubench"),
            "TRITON_CACHE_DIR": str(cache / "triton"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
            "GPUBENCH_BYTECODE_DIR": str(cache.parent / "bytecode")}


def measured_ceilings(caches: Path) -> Path | None:
    """The machine's ceilings, measured once by `gpubench peak` into a cache of their own;
    the folder to copy into each cold cache (None if peak failed: then each run measures)."""
    seed = caches / "ceilings-seed"
    code = subprocess.call([sys.executable, "-m", "gpubench", "peak"], env=cache_env(seed),
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    folder = seed / "gpubench" / "ceilings"
    return folder if code == 0 and any(folder.glob("*.json")) else None


def copy_known(cache: Path, known: dict[str, Path | None]) -> None:
    """What gpubench knows of the machine, {cache folder name: folder measured once},
    copied into `cache` where it lacks that folder (a cold cache)."""
    for part, source in known.items():
        if source is not None and not (cache / "gpubench" / part).exists():
            shutil.copytree(source, cache / "gpubench" / part)


def measured_interference(caches: Path, out: Path, parallel: list[list[str]],
                          extra: list[str], ceilings: Path | None) -> Path | None:
    """The interference reference, measured once for each way of running on several GPUs
    (`parallel`: their arguments) by a one-point run into a cache of its own (its output
    in OUT/interference-seed.log); the folder to copy into each cold cache (None if none
    was kept: then each cold run measures, and says so)."""
    seed = caches / "interference-seed"
    copy_known(seed, {"ceilings": ceilings})
    with open(out / "interference-seed.log", "w") as log:
        for arguments in parallel:
            command = [sys.executable, "-m", "gpubench", "run", "square", "--variants",
                       "torch", "--sizes", "2^20", "--dtype", "float32", "--out",
                       str(seed / "interference-seed"), "--force", *arguments, *extra]
            print(f"== interference seed: {' '.join(command[2:])}", flush=True)
            log.flush()
            code = subprocess.call(command, env=cache_env(seed), stdout=log,
                                   stderr=subprocess.STDOUT)
            print(f"   exit {code}", flush=True)
    kept = sorted((seed / "gpubench" / "interference").glob("*.json"))
    print(f"   {len(kept)} of {len(parallel)} kept; log {out / 'interference-seed.log'}",
          flush=True)
    return kept[0].parent if kept else None


def compile_dask_bytecode(caches: Path) -> None:
    """Dask's modules compiled into the shared bytecode cache, as `gpubench peak` does
    torch's: pip compiles a package's bytecode when it installs it, but where gpubench
    keeps bytecode under a prefix of its own (build/bytecode.py) Python reads only that,
    so without this the first --cluster run (dask-cold) compiled distributed, dask and
    tornado from source in the parent and in every Dask worker, a cost of the benchmark's
    fresh bytecode folder, not of a cold build cache."""
    code = ("from gpubench.build import bytecode; bytecode.use_in_this_process(); "
            "import distributed, dask.config  # noqa")
    subprocess.call([sys.executable, "-c", code], env=cache_env(caches / "ceilings-seed"),
                    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def run_suite(name: str, config: str, out: Path, extra: list[str], cache: Path,
              known: dict[str, Path | None] | None = None) -> tuple[Path, float]:
    """Run the suite once; (its run folder, the command's wall seconds). `known`: what
    gpubench knows of the machine, {cache folder name: folder to copy there}, copied into
    a cache that lacks it (copy_known)."""
    folder = out / name
    # Each process of the run marks its steps there (benchmarks/timeline.py prints them).
    env = {**cache_env(cache), "GPUBENCH_TIMELINE": str(out / f"{name}.timeline")}
    with contextlib.suppress(OSError):
        (out / f"{name}.timeline").unlink()
    copy_known(cache, known or {})
    command = [sys.executable, "-m", "gpubench", "run", "--config", config, "--out",
               str(folder), "--force", *extra]
    print(f"== {name}: {' '.join(command[2:])}", flush=True)
    start = time.perf_counter()
    with open(out / f"{name}.log", "w") as log:
        code = subprocess.call(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    print(f"   exit {code} in {wall:.1f} s; log {out / f'{name}.log'}", flush=True)
    walls = out / "walls.json"  # after each run: a table can be made from what finished
    known = json.loads(walls.read_text()) if walls.exists() else {}
    walls.write_text(json.dumps({**known, name: wall}))
    return folder, wall


def within_ci(reference, other) -> tuple[int, int]:
    """How many of `other`'s passing medians lie inside `reference`'s 95% CI."""
    ref, inside, total = reference.by_key(), 0, 0
    for key, row in other.by_key().items():
        base = ref.get(key)
        if base is None or not (base.passed and row.passed) or base.summary is None:
            continue
        total += 1
        inside += base.summary.ci_low <= row.median_s <= base.summary.ci_high
    return inside, total


def build_cell(run) -> str:
    """'12.3 s, 41.0 s summed, 3.3x' from the run's build phase, or '-' without one."""
    phase = run.env.get("build_phase")
    if not phase:
        return "-"
    if phase.get("cached") == phase.get("builds"):
        return f"{phase['wall_s']:.1f} s, all cached"
    return (f"{phase['wall_s']:.1f} s, {phase['compile_s']:.1f} s summed, "
            f"{phase.get('parallelism') or 0:.1f}x")


def passed_medians(run) -> dict:
    """{point key: median seconds} of the run's passing points."""
    return {key: row.median_s for key, row in run.by_key().items()
            if row.passed and row.median_s}


def excess_cell(reference: dict, sequential: dict, parallel: dict,
                groups: dict | None = None) -> str:
    """'+0.04 pp (CI to +0.07), p 0.12': how much further the parallel run's medians lie
    from the reference's than the sequential rerun's do, point by point (median of the
    excess |log ratio|, in percentage points, and the upper end of its 95% CI), and the
    signed-rank test's one-sided p that they lie further. Each argument: {point key:
    median seconds}. With `groups` ({point key: its records.point.PointKey}), each |log
    ratio| is taken beyond its group's common shift, as `compare` reads it (beyond_group):
    what a user's verdicts see."""
    keys = [key for key in reference if key in sequential and key in parallel]

    def distances(run: dict) -> dict:
        ratios = {k: math.log(run[k] / reference[k]) for k in keys}
        return beyond_group(ratios, groups) if groups else {k: abs(v) for k, v in ratios.items()}

    far, near = distances(parallel), distances(sequential)
    excess = [far[k] - near[k] for k in keys]
    p = signed_rank_p_greater(excess)
    if p is None:
        return "-"
    # How much further at most: with ~170 points the test calls a median excess of
    # hundredths of a point measurable, against compare's 1% threshold (its smallest
    # FASTER/SLOWER); the CI's upper end says how large the excess can be.
    _, high = median_ci_order(sorted(excess))
    return f"{100 * statistics.median(excess):+.2f} pp (CI to {100 * high:+.2f}), p {p:.2f}"


def beyond_group(log_ratios: dict, groups: dict) -> dict:
    """{point key: |log ratio| beyond its group's common shift}: with 3+ variants, off the
    group's median ratio; with 2, less the move both made the same way; alone, as it is
    (analysis/comparison.py group_shifts, what `compare` allows for). A worker process
    moves its short kernels by its own few percent, common to the variants it measures
    (schedule.py): this is the distance that shift cannot reach."""
    shifts = group_shifts({k: log_ratios[k] for k in log_ratios if k in groups},
                          {k: groups[k] for k in log_ratios if k in groups})
    far = {}
    for key, ratio in log_ratios.items():
        shift = shifts.get(key, GroupShift())
        far[key] = (abs(ratio - math.log(shift.drift)) if shift.drift != 1.0
                    else max(0.0, abs(ratio) - math.log1p(shift.witness)))
    return far


def row_for(name: str, run, wall: float, reference, reference_wall: float | None,
            sequential=None) -> list[str]:
    statuses = {k: r.status for k, r in run.by_key().items()}
    same = statuses == {k: r.status for k, r in reference.by_key().items()}
    inside, total = within_ci(reference, run)
    comparison = compare_runs(reference, run)
    counts = comparison.counts()
    verdicts = " ".join(f"{v}:{n}" for v, n in sorted(counts.items())) + \
        moved_picks(reference, run, comparison)
    speedup = f"{reference_wall / wall:.2f}x" if reference_wall and wall else "-"
    span = run.meta.get("points_span_s")
    fixed = f"{wall - span:.1f}" if span is not None else "-"
    interference = (run.env.get("interference") or {}).get("summary", "-")
    lanes = len(run.meta.get("lanes") or []) or 1
    excess, beyond = (excess_cells(reference, sequential, run)
                      if lanes > 1 and sequential is not None else ("-", "-"))
    return [name, str(lanes), f"{wall:.1f}", speedup, fixed, build_cell(run),
            "yes" if same else "NO", f"{inside}/{total}", verdicts,
            spread_cell(comparison), interference.removeprefix("interference, "), excess,
            beyond]


def excess_cells(reference, sequential, run) -> tuple[str, str]:
    """The last two columns of a parallel `run`: excess_cell over the points whose autotune
    pick moved in neither run, raw and beyond group shifts."""
    moved = moved_keys(reference, [sequential, run])
    medians = [{k: v for k, v in passed_medians(r).items() if k not in moved}
               for r in (reference, sequential, run)]
    groups = {key: row.key for key, row in reference.by_key().items()}
    return excess_cell(*medians), excess_cell(*medians, groups=groups)


def moved_keys(reference, runs: list) -> set:
    """The points whose Triton autotuner ran another config in any of `runs` than in
    `reference`: each process picks its own (configs within a few % of each other trade
    places), so these time other code, not the same code elsewhere; the excess columns
    leave them out (moved_picks counts their verdicts apart)."""
    before = reference.by_key()
    return {key for run in runs for key, row in run.by_key().items()
            if key in before and autotune_moved(before[key], row)}


def moved_picks(reference, run, comparison) -> str:
    """' (2 decided with another autotune pick)': FASTER/SLOWER verdicts on points whose
    Triton autotuner ran another config than in the one-GPU run (analysis/config_change.py),
    which sequential runs of one GPU show too; '' when none."""
    before, after = reference.by_key(), run.by_key()
    moved = sum(1 for p in comparison.points if p.comparison is not None
                and p.comparison.verdict in ("FASTER", "SLOWER")
                and autotune_moved(before[p.key.text()], after[p.key.text()]))
    return f" ({moved} decided with another autotune pick)" if moved else ""


def spread_cell(comparison) -> str:
    """'0.3% / 2.8%': the median and 90th percentile of |NEW / BASE - 1| over the points
    compared for speed. A count of FASTER/SLOWER verdicts moves by a few between two
    sequential runs (2, 6 and 3 in three pairs on 2 H200s: a few bimodal us-scale points
    flip); the spread of all the ratios is the steadier bar."""
    changes = sorted(abs(math.log(p.comparison.ratio)) for p in comparison.points
                     if p.comparison is not None and p.comparison.ratio > 0)
    if not changes:
        return "-"
    return (f"{100 * math.expm1(statistics.median(changes)):.1f}% / "
            f"{100 * math.expm1(changes[int(0.9 * (len(changes) - 1))]):.1f}%")


def print_table(rows: list[list[str]]) -> None:
    header = ["run", "workers", "wall s", "vs 1 GPU", "fixed s", "build phase",
              "same statuses", "in 1-GPU CI", "compare vs 1 GPU", "spread (median / p90)",
              "interference", "further than a rerun", "the same, beyond group shifts"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/gpu-full.toml")
    parser.add_argument("--out", default="scale-out")
    parser.add_argument("--cpu-workers", type=int, default=2)
    parser.add_argument("--skip-cluster", action="store_true")
    parser.add_argument("--cold-ceilings", action="store_true",
                        help="cold runs measure the GPU's ceilings too (see above)")
    parser.add_argument("--cold-interference", action="store_true",
                        help="cold runs measure the interference reference too (see above)")
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of the runs already in --out (walls.json)")
    parser.add_argument("extra", nargs="*", help="after --: arguments for every run")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    if args.table_only:
        walls = json.loads((out / "walls.json").read_text())
        print_runs({name: (out / name, wall) for name, wall in walls.items()})
        return 0
    out.mkdir(parents=True, exist_ok=True)
    caches = Path(tempfile.mkdtemp(prefix="gpubench-scale-out-"))  # builds: not results
    import torch

    gpu = torch.cuda.is_available()
    many = ["--devices", "all"] if gpu else ["--workers", str(args.cpu_workers)]
    dask = ["--cluster", "local"] + ([] if gpu else ["--workers", str(args.cpu_workers)])
    kinds = [("1gpu", [], "one"), ("all", many, "all")]
    if not args.skip_cluster:
        kinds.append(("dask", dask, "dask"))
    plan = [(f"{kind}-{state}", extra, cache) for state in ("cold", "warm")
            for kind, extra, cache in kinds]
    ceilings = None if args.cold_ceilings else measured_ceilings(caches)
    if not args.skip_cluster:
        compile_dask_bytecode(caches)
    parallel = [extra for kind, extra, _ in kinds if kind != "1gpu"]
    # CPU workers measure it every run (run/interference/cache.py): nothing to seed there.
    interference = None if args.cold_interference or not gpu else \
        measured_interference(caches, out, parallel, args.extra, ceilings)
    known = {"ceilings": ceilings, "interference": interference}
    done = {name: run_suite(name, args.config, out, [*extra, *args.extra], caches / cache,
                            known)
            for name, extra, cache in plan}
    shutil.rmtree(caches, ignore_errors=True)
    print_runs(done)
    return 0


def print_runs(done: dict[str, tuple[Path, float]]) -> None:
    """The table of finished runs {name: (folder, command wall s)}: one GPU is the
    reference (cold against cold, warm against warm)."""
    runs = {name: (gpubench.load_run(str(folder)), wall) for name, (folder, wall) in done.items()
            if (Path(folder) / "results.json").exists()}
    reference = runs["1gpu-cold"][0]
    sequential = runs.get("1gpu-warm", (None, None))[0]
    rows = [row_for(name, run, wall, reference,
                    runs.get(f"1gpu-{name.split('-')[1]}", (None, None))[1], sequential)
            for name, (run, wall) in runs.items()]
    print_table(rows)
    print_runs_a_side({name: run for name, (run, _) in runs.items()})


def print_runs_a_side(runs: dict) -> None:
    """Each way of running (all GPUs, Dask) against one GPU with both its runs a side,
    cold and warm (compare --base-repeat/--new-repeat): a fresh process moves a short
    kernel by its own few percent (docs/measurement.md "Between processes"), which one
    run a side takes for a change; two a side put it in the interval."""
    one = [runs[name] for name in ("1gpu-cold", "1gpu-warm") if name in runs]
    for kind in ("all", "dask"):
        many = [runs[f"{kind}-{state}"] for state in ("cold", "warm") if f"{kind}-{state}" in runs]
        if len(one) + len(many) < 3 or not one or not many:
            continue
        result = compare_runs(one[0], many[0], base_repeats=one[1:], new_repeats=many[1:])
        changed = ", ".join(p.key.text() for p in result.points
                            if p.verdict in (FASTER, SLOWER))
        print(f"{kind} vs 1gpu, {len(one)} and {len(many)} runs a side: "
              f"{counts_text(result)}" + (f" ({changed})" if changed else ""))


if __name__ == "__main__":
    sys.exit(main())

"""The `gpubench` command line. Each command parses, builds its request, delegates, and maps
errors to exit codes.

This is the only module that prints errors and chooses exit statuses: bad input becomes
one line on stderr and a non-zero code (see errors.py), never a traceback. The options
several commands share are defined once, in options.py; an option's destination name is
its request field's name, so a request is built from the parsed options directly. Each
command imports its module when it runs: importing all of them costs ~0.9 s, which
`gpubench --help` and a typo should not pay.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from dataclasses import fields
from pathlib import Path

import click

from gpubench import errors
from gpubench.build import bytecode
from gpubench.cli import options as opts
from gpubench.cli.guard import guarded, make_console
from gpubench.cli.options import merge_options
from gpubench.parsing import split_names
from gpubench.run import timeline
from gpubench.run.config import RunConfig, load_config
from gpubench.version import __version__

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
# The package's own __version__ (the one pyproject.toml reads and results.json records):
# an editable install's metadata keeps the version it was installed at.
@click.version_option(version=__version__, prog_name="gpubench")
def cli() -> None:
    """Benchmark and profile GPU kernels: check every variant against a reference,
    time it honestly, and compare it with PyTorch/cuBLAS."""


@cli.command()
@opts.selection_options
@click.option("--config", "config_path", metavar="SUITE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="A suite: a shipped one by name (quick; configs/ lists them) or a "
                   ".toml file; command-line options override it.")
@opts.kernels_dir_option
@opts.problem_options
@opts.timing_options
@opts.timeout_option("Seconds a point may take outside its build before it counts as hung [120].")
@click.option("--build-timeout", "build_timeout_s", type=opts.FiniteFloat(min=1),
              help="Seconds a build may take [600].")
@opts.device_option()
@click.option("--seed", type=click.IntRange(min=0),
              help="Seed for the random inputs (default: new each run).")
@opts.out_option("this run's results", refuse_empty=True)
@click.option("--force", is_flag=True,
              help="Reuse an --out folder that already holds results (they are replaced).")
@opts.json_option("Print the results as JSON on stdout.")
@opts.run_extra_options
@opts.compiled_options
@opts.watch_option
@opts.parallel_options
def run(config_path, **options):
    """Check, time and compare every variant of kernel FAMILIES (default: all)."""
    guarded(lambda: _run(config_path, options))


def _run(config_path: Path | None, options: dict) -> int:
    """The options that RunRequest names go to it; the rest (what to run and how to time
    it) are laid over the suite file's values."""
    from gpubench.commands import run_request

    if options["markdown"] and options["as_json"]:
        raise errors.UsageError("--markdown and --json both print on stdout: choose one")
    problem = opts.take_problem(options)
    if problem:
        options["families"] = (*options.get("families", ()), problem)
    named = [f.name for f in fields(run_request.RunRequest) if f.name in options]
    settings = {name: options.pop(name) for name in named}
    config = merge_options(load_config(config_path) if config_path else RunConfig(), options)
    request = run_request.RunRequest(config, **settings)
    if request.watch:
        from gpubench.commands import watch

        return watch.execute(request, make_console())
    with run_request.early_workers(request) as prestart:  # before run.py's imports (~0.2 s)
        from gpubench.commands import run as run_cmd

        return run_cmd.execute(request, make_console(stderr=request.as_json), prestart)


@cli.command()
@click.argument("base")
@click.argument("new", required=False)
@opts.threshold_option(1.0, "Changes within +-this % count as SAME; a FASTER/SLOWER must "
                           "exceed it.")
@click.option("--fail-on-regression", is_flag=True,
              help=f"Exit {errors.EXIT_REGRESSION} when a point is SLOWER, or PASS in BASE and "
                   "SUSPECT or failed in NEW, when BASE points are missing in NEW, or when no "
                   "point was compared (for CI gates).")
@click.option("--markdown", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              metavar="FILE",
              help="Write the table as markdown to FILE (for a PR comment); stdout keeps the "
                   "table. '-': the markdown on stdout instead.")
@click.option("--base-repeat", "base_repeats", multiple=True, metavar="RUN",
              help="Another run of BASE's code (repeatable): with three runs or more "
                   "between the sides, a point's CI comes from the runs' medians, which "
                   "holds how much a fresh process moves it.")
@click.option("--new-repeat", "new_repeats", multiple=True, metavar="RUN",
              help="Another run of NEW's code (repeatable), as --base-repeat.")
@opts.json_option("Print the comparison as JSON.")
def compare(threshold_pct, **options):
    """Is NEW faster than BASE, really? Two runs (run folders, 'latest', 'latest~1') joined
    point by point: both medians, the change with its CI (95%, wider over many points: 5%
    family-wise), and a verdict (FASTER,
    SLOWER, SAME, UNSURE) with its reason; SUSPECT or FAILED for a point that passed in
    BASE and no longer does. Runs with no point in common exit 2, naming what differs.
    Short kernels move by a few percent from one process to the next, which one run a
    side cannot show: --base-repeat/--new-repeat add runs, `gpubench ab` pairs both in one
    process (`compare AB_RUN` shows its verdicts)."""
    guarded(lambda: _compare(threshold_pct, options))


def _compare(threshold_pct: float, options: dict) -> int:
    from gpubench.commands import compare

    if options["markdown"] == compare.STDOUT and options["as_json"]:
        raise errors.UsageError("--markdown - and --json both print on stdout: choose one, "
                                "or give --markdown a file")
    return compare.execute(compare.CompareRequest(threshold=threshold_pct / 100, **options),
                           make_console())


@cli.command()
@click.argument("family")
@opts.ab_options
@opts.out_option("the A/B run's record")
@opts.kernels_dir_option
@opts.device_option()
def ab(family, threshold_pct, **options):
    """Is my change faster? Two versions of FAMILY timed in ONE worker, calls interleaved:
    per point the paired ratio NEW/BASE, its 99% CI and verdict; unchanged: controls."""
    from gpubench.commands import ab

    def body() -> int:
        config = merge_options(RunConfig(), {**options, "families": (family,)})
        request = ab.ABRequest.from_options(family, config, threshold_pct / 100, options)
        return ab.execute(request, make_console())

    guarded(body)


@cli.command()
@click.argument("family")
@opts.bisect_options
@opts.out_option("the bisect's record")
@opts.kernels_dir_option
@opts.device_option()
def bisect(family, threshold_pct, **options):
    """Which commit made FAMILY slower? An A/B of BAD against GOOD, then binary search over
    the commits that changed the family's folder, each against GOOD; the first SLOWER one
    is confirmed against its parent. Exit 13 when a culprit is confirmed."""
    from gpubench.commands import bisect

    def body() -> int:
        config = merge_options(RunConfig(), {**options, "families": (family,)})
        request = bisect.BisectRequest.from_options(family, config, threshold_pct / 100, options)
        return bisect.execute(request, make_console())

    guarded(body)


@cli.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file [report.html in the (last) run's folder].")
@click.option("--markdown", is_flag=True,
              help="Print the tables (and comparisons) as markdown on stdout instead; with "
                   "-o, write the HTML too.")
@click.option("--svg", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each chart as an SVG file in this folder, to paste in a PR "
                   "(drawn by headless Chromium; exit 6 without it).")
@click.option("--png", type=click.Path(file_okay=False, path_type=Path),
              help="Also write each chart as a PNG file (2x) in this folder (headless "
                   "Chromium; exit 6 without it).")
def report(**options):
    """One offline HTML page of RUNS (run folders, 'latest', 'latest~1'): environment,
    sortable tables, roofline and sweep charts, failures; each later run compared with the
    first."""
    from gpubench.commands import report

    guarded(lambda: report.execute(report.ReportRequest(**options), make_console()))


@cli.command("list")
@click.argument("families", nargs=-1)
@opts.kernels_dir_option
@opts.device_option("Judge 'runs here' for this device.")
def list_command(families, **options):
    """Kernel families, one line each: dtypes, default shapes, how many variants run here.
    With FAMILIES, each in full: axes and default shapes, every variant with its kind,
    dtypes, and whether it runs here or why not."""
    from gpubench.commands import listing

    request = listing.ListRequest(tuple(families), **options)
    guarded(lambda: listing.execute(request, make_console()))


@cli.command()
@click.option("-n", "--last", type=click.IntRange(min=1), default=20, show_default=True,
              help="Show the newest N runs.")
@click.option("--all", "show_all", is_flag=True, help="Show every recorded run.")
def runs(last, show_all):
    """Recorded runs, newest first: the name compare and report take (latest, latest~1),
    when, folder, points, their statuses, GPU and command. Every run is recorded where it
    saves its first results, wherever --out put it ($GPUBENCH_CACHE_DIR/runs.json, else
    ~/.cache/gpubench/runs.json); deleted folders are skipped."""
    from gpubench.commands import runs

    guarded(lambda: runs.execute(runs.RunsRequest(None if show_all else last), make_console()))


@cli.command()
@click.argument("family", required=False)
@click.option("--variants", "variants", multiple=True, metavar="NAMES",
              help="Only these variants (comma-separated, repeatable).")
@click.option("--shape", "shapes", multiple=True, metavar="SHAPE",
              help="Only this shape: as recorded (M=16,N=4096,K=4096) or a size (2^20).")
@click.option("--since", help="Only runs since a date (YYYY-MM-DD) or N days (14d).")
@click.option("-n", "--last", type=click.IntRange(min=1), default=20, show_default=True,
              help="Runs shown per series (every run is searched for change points).")
@opts.threshold_option(1.0, "A change point's 95% CI must lie beyond +-this %.")
@opts.history_check_options
@opts.history_backfill_options
@opts.history_output_options
def history(family, variants, threshold_pct, **options):
    """Every recorded run as points of series (one point, one GPU model, one timing
    method): medians with their CIs by run and commit, the change points found (PELT,
    gated by a rank test; docs/measurement.md, "History") with their commit range and
    size. Runs are gathered from their folders into a SQLite store beside the index of
    runs; SUSPECT and failed rows are marks, not points."""
    from gpubench.commands import history as history_cmd

    request = history_cmd.HistoryRequest(family, split_names(variants),
                                         threshold=threshold_pct / 100, **options)
    guarded(lambda: history_cmd.execute(request, make_console()))


@cli.command()
@opts.device_option("Which device's ceilings.")
@click.option("--force", is_flag=True, help="Measure again even if cached.")
@opts.json_option("Print the ceilings as JSON.")
def peak(**options):
    """Measure this machine's ceilings (copy bandwidth, matmul TFLOP/s per precision), once.

    Precisions: fp32 on CUDA cores, TF32, fp16, bf16 and, from compute capability 8.9, fp8;
    one the device lacks is shown unknown, with why. Every result's 'of roof' column and
    roofline placement use them (a variant's declared precision picks its ceiling); they
    are cached per GPU model, driver and torch version."""
    from gpubench.commands import peak

    guarded(lambda: peak.execute(peak.PeakRequest(**options), make_console()))


@cli.command()
@opts.target_options("profile", "largest")
@click.option("--set", "set_name", default="hints", show_default=True,
              help="ncu section set: 'hints' (the sections behind ncu's advice), or an ncu "
                   "set such as full, detailed, basic.")
@click.option("--section", "sections", multiple=True, help="Extra ncu section id (repeatable).")
@click.option("--metrics", help="Extra metrics, comma-separated.")
@click.option("--ncu-path", help="The ncu executable (default: PATH, then /usr/local/cuda).")
@opts.timeout_option("Seconds one ncu run may take before it is killed.", default=600)
@click.option("--clock-control", type=click.Choice(["none", "base"]), default="none",
              show_default=True, help="ncu's clock control; 'none' leaves clocks as found.")
@click.option("--info", "include_info", is_flag=True, help="Also show INF rule results.")
@click.option("--import", "import_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Show an existing .ncu-rep instead of profiling (no GPU needed).")
@opts.kernels_dir_option
@opts.problem_options
@opts.out_option("the reports")
@opts.json_option("Metrics and hints as JSON on stdout.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write metrics and hints as CSV rows to this file.")
def ncu(set_name, sections, metrics, ncu_path, timeout_s, clock_control, include_info,
        **options):
    """Nsight Compute on FAMILY's variants: speed of light and ncu's hints, ranked."""
    from gpubench.commands import ncu

    def body() -> int:
        settings = ncu.NcuOptions(set_name, tuple(sections), split_names(metrics), ncu_path,
                              timeout_s, clock_control, include_info)
        target = opts.target_choice(options, required=False)
        request = ncu.NcuRequest(target, settings, **options)
        return ncu.execute(request, make_console(stderr=request.as_json))

    guarded(body)


@cli.command()
@opts.target_options("profile", "largest")
@click.option("--nsys-path", help="The nsys executable (default: PATH, then NVIDIA's folders).")
@opts.timeout_option("Seconds one nsys run may take before it is killed.", default=120)
@opts.kernels_dir_option
@opts.problem_options
@opts.out_option("the reports")
@opts.json_option("Kernels and NVTX ranges as JSON.")
def nsys(nsys_path, timeout_s, **options):
    """Nsight Systems on FAMILY's variants: the measured call's kernels and NVTX range."""
    from gpubench.commands import nsys

    def body() -> int:
        target = opts.target_choice(options)
        request = nsys.NsysRequest(target, nsys.NsysOptions(nsys_path, timeout_s), **options)
        return nsys.execute(request, make_console(stderr=request.as_json))

    guarded(body)


@cli.command()
@click.option("--tool", "tools", multiple=True,
              help="memcheck (default), racecheck, initcheck, synccheck, or 'all'; repeatable "
                   "or comma-separated.")
@opts.target_options("check", "smallest")
@click.option("--sanitizer-path", help="The compute-sanitizer executable (default: PATH, then "
                                       "/usr/local/cuda/bin).")
@opts.timeout_option("Seconds one tool run (build included) may take.", default=600)
@opts.kernels_dir_option
@opts.problem_options
@opts.out_option("the XML records and logs")
@opts.json_option("Findings as JSON on stdout.")
def sanitize(**options):
    """compute-sanitizer on FAMILY's variants: out-of-bounds and misaligned accesses
    (memcheck), shared-memory races (racecheck), uninitialised reads (initcheck), barrier
    misuse (synccheck), each at its line in your source. Exit 14 when anything is found."""
    from gpubench.commands import sanitize

    def body() -> int:
        target = opts.target_choice(options)
        request = sanitize.SanitizeRequest(target, **options)
        return sanitize.execute(request, make_console(stderr=request.as_json))

    guarded(body)


@cli.command(context_settings={**CONTEXT, "ignore_unknown_options": True,
                               "allow_interspersed_args": False})
@click.option("--range", "region", metavar="NAME",
              help="Only the kernels launched inside this record_function/NVTX range (default: "
                   "the program's gpubench.region() ranges if it has any, else everything).")
@click.option("--skip-first", type=click.IntRange(min=0), default=0, show_default=True,
              help="Leave out the range's first N instances (warm-up steps, compilation).")
@opts.timeout_option("Seconds the program may run; then its whole process tree is stopped "
                     "(what it recorded is kept).", default=1800)
@click.option("--ncu", is_flag=True,
              help="Then run the program under Nsight Compute once per top kernel (its first "
                   "launch in the region) and show ncu's view of each.")
@click.option("--top", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many kernels --ncu profiles.")
@opts.out_option("the trace and tables")
@opts.json_option("The analysis as JSON on stdout.")
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
def profile(program, **options):
    """Profile any Python program: gpubench profile [OPTIONS] -- python train.py ARGS.
    Its kernels by time (who wrote them, the ranges they ran under), how busy the GPU was
    and its largest idle gaps; with --ncu, Nsight Compute's advice on the top kernels."""
    from gpubench.commands import profile

    request = profile.ProfileRequest(tuple(program), **options)
    guarded(lambda: profile.execute(request, make_console(stderr=request.as_json)))


@cli.command()
@opts.selection_options
@opts.kernels_dir_option
@click.option("--iterations", type=click.IntRange(min=1), default=5, show_default=True,
              help="Calls of each variant recorded in the trace.")
@click.option("--gzip", "compress", is_flag=True, help="Write trace.json.gz instead.")
@opts.timeout_option("Seconds the tracing may take.", default=600)
@opts.device_option()
@opts.out_option("trace.json")
def trace(families, sizes, shapes, axes, dtypes, variants, kernels_dirs, **options):
    """A Chrome/Perfetto trace of each variant (torch.profiler), with a kernel summary."""
    from gpubench.commands import trace

    def body() -> int:
        request = trace.TraceRequest(split_names(families), opts.shape_choice(sizes, shapes, axes),
                               opts.chosen_dtypes(dtypes) if split_names(dtypes) else None,
                               split_names(variants),
                               tuple(kernels_dirs), **options)
        return trace.execute(request, make_console())

    guarded(body)


@cli.command()
@click.argument("family")
@click.option("--size", help="One size (default: the family's first default shape).")
@click.option("--shape", help="One shape, e.g. rows=4096,cols=1000 (instead of --size).")
@click.option("--dtype", help="One dtype (default float32); baked into the kernels.")
@click.option("--mode", type=click.Choice(("default", "max-autotune")), default="default",
              show_default=True, help="torch.compile's mode.")
@click.option("--name", help="The new variant's name [compiled_<shape>_<dtype>].")
@click.option("--no-run", "run", is_flag=True, flag_value=False, default=True,
              help="Write the module and spec entry only; do not run them.")
@opts.kernels_dir_option
@opts.device_option()
def eject(family, size, shape, dtype, kernels_dirs, **options):
    """Write the Triton code torch.compile generates for FAMILY's reference into the family
    folder as a new Triton variant (runs without torch.compile), add it to spec.py, and run
    it once beside the baseline. Exit 2 when the reference compiles to no Triton kernel
    (e.g. matmul: an extern cuBLAS call)."""
    from gpubench.commands import eject as eject_cmd

    def body() -> int:
        request = eject_cmd.EjectRequest(family, opts.one_shape(size, shape), opts.one_dtype(dtype),
                               kernels_dirs=tuple(kernels_dirs), **options)
        return eject_cmd.execute(request, make_console())

    guarded(body)


@cli.command()
@click.argument("family")
@click.option("--variant", required=True,
              help="The variant to tune: a Triton one with a @triton.autotune kernel, or a "
                   "CUDA one whose spec entry declares tune={MACRO: (values, ...)}.")
@click.option("--size", help="One size (default: the family's first default shape).")
@click.option("--shape", help="One shape, e.g. M=4096,N=4096,K=4096 (instead of --size).")
@click.option("--dtype", help="One dtype (default: the family's first).")
@click.option("--exhaustive", is_flag=True,
              help="Time every config for the whole --min-time; stop none early.")
@click.option("--min-time", "min_time_ms", type=opts.FiniteFloat(min=0, min_open=True),
              help="ms of timing per config: with --exhaustive, each config's [1000]; "
                   "else the first racing round's, doubled each round [20].")
@opts.threshold_option(1.0, "Configs within +-this % of the fastest count as SAME (tied).")
@click.option("--jobs", type=click.IntRange(min=1),
              help="Workers checking (and building) configs at once [min(8, cores)].")
@click.option("--no-pin", "pin", is_flag=True, flag_value=False, default=True,
              help="Do not write the pinned-config file that `run` uses.")
@click.option("--markdown", is_flag=True, help="Also print the table as markdown.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="The run folder [profiles/<time>-<family>-tune].")
@opts.kernels_dir_option
@opts.device_option()
def tune(family, size, shape, dtype, min_time_ms, threshold_pct, kernels_dirs, **options):
    """Check every config of a variant's space on its own, race the ones that pass (a
    bootstrap CI per config; configs clearly behind the leader stop early), and pin the
    pick for this GPU, dtype and shape: `run` then runs that config and says so. Ties are
    marked and broken by fewest registers, then declaration order. On a CPU every config
    is checked and none timed. Exit 1 when no config passed its check."""
    from gpubench.commands import tune as tune_cmd

    def body() -> int:
        request = tune_cmd.TuneRequest(family, options.pop("variant"), opts.one_shape(size, shape),
                              opts.one_dtype(dtype), kernels_dirs=tuple(kernels_dirs),
                              min_time_s=min_time_ms / 1e3 if min_time_ms else None,
                              threshold=threshold_pct / 100, **options)
        return tune_cmd.execute(request, make_console())

    guarded(body)


def main() -> None:
    """The `gpubench` command: click's exit code, then an exit without Python's teardown
    (finalising torch's modules costs ~0.5 s after every command: docs/journal, issue 32).
    The streams are flushed and the atexit handlers run first; a non-daemon thread still
    alive (a library's) gets the normal exit, which waits for it."""
    bytecode.use_in_this_process()  # before torch's import: build/bytecode.py says why
    timeline.mark_process_start("parent")
    try:
        cli(prog_name="gpubench")
        code = 0
    except SystemExit as stop:
        code = stop.code
    if not isinstance(code, int):  # sys.exit("message") or None, as Python would treat it
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    alive = [t.name for t in threading.enumerate()
             if t.is_alive() and not t.daemon and t is not threading.main_thread()]
    timeline.mark(f"parent: exit ({'threads alive: ' + ', '.join(alive) if alive else 'fast'})")
    if alive:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)

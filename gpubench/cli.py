"""The `gpubench` command line. Each command parses, delegates, and maps errors to exit codes.

This is the only module that prints errors and chooses exit statuses: bad
input becomes one line on stderr and a non-zero code (see errors.py), never a
traceback.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from gpubench import errors
from gpubench.parsing import parse_dtype, parse_dtypes, parse_size, parse_sizes, split_names
from gpubench.records.shape import ShapeChoice, parse_axis, parse_shape
from gpubench.run.config import RunConfig, load_config
from gpubench.timing.settings import with_user_values

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="gpubench")
def cli() -> None:
    """Benchmark and profile GPU kernels: check every variant against a reference,
    time it honestly, and compare it with PyTorch/cuBLAS."""


# ------------------------------------------------------------------ run


def timing_options(command):
    """The options that shape one measurement, shared by every command that times."""
    options = [
        click.option("--mode", "modes", multiple=True,
                     help="Timing mode(s): cold (default), warm, graph, cupti, wall, or 'all'; "
                          "repeatable or comma-separated."),
        click.option("--warmup", "warmup_ms", type=click.FloatRange(min=0),
                     help="Warmup per point and mode, ms [100]."),
        click.option("--min-time", "min_time_ms", type=click.FloatRange(min=0),
                     help="Sample for at least this long, ms [50]."),
        click.option("--max-time", "max_time_ms", type=click.FloatRange(min=1),
                     help="Stop sampling after this long even if not converged, ms [500]."),
        click.option("--target-ci", "target_ci_pct", type=click.FloatRange(min=0, min_open=True),
                     help="Stop once the 95%% CI of the median is within +-this %% [0.5]."),
        click.option("--min-samples", type=click.IntRange(min=1), help="Fewest samples [10]."),
        click.option("--max-samples", type=click.IntRange(min=1), help="Most samples [10000]."),
        click.option("--remeasure-throttled", is_flag=True, default=None,
                     help="Measure again once if clocks slowed down (thermal/HW) meanwhile."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def shape_options(command):
    """--sizes, --shape and --axis: which shapes to run, shared by run and trace."""
    options = [
        click.option("--sizes", help="Comma-separated sizes, e.g. 1024,4096, 2^20, 4k, 1M: one "
                                     "axis, or every axis where the family says how (matmul: "
                                     "M=N=K). Default: the family's shapes."),
        click.option("--shape", "shapes", multiple=True,
                     help="A whole shape, e.g. M=16,N=4096,K=4096 (repeatable)."),
        click.option("--axis", "axes", multiple=True,
                     help="Sweep an axis, e.g. K=64,128,256 (repeatable: the cartesian "
                          "product; other axes at their defaults)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def shape_choice(sizes: str | None, shapes: tuple[str, ...], axes: tuple[str, ...]) -> ShapeChoice:
    """The command line's shape options as one ShapeChoice (empty: the defaults)."""
    swept = dict(parse_axis(text) for text in axes)
    return ShapeChoice(sizes=parse_sizes(sizes) if sizes is not None else (),
                       shapes=tuple(parse_shape(text) for text in shapes),
                       axes=tuple(swept.items()))


@cli.command()
@click.argument("families", nargs=-1)
@shape_options
@click.option("--dtype", "dtypes", multiple=True,
              help="float32, float16/fp16, bfloat16/bf16, or 'all'; repeatable or comma-separated.")
@click.option("--variants", multiple=True,
              help="Only these variants (the baseline runs too); repeatable or comma-separated.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A suite file (configs/*.toml); command-line options override it.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@timing_options
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1),
              help="Seconds a point may take outside its build before it counts as hung [120].")
@click.option("--build-timeout", "build_timeout_s", type=click.FloatRange(min=1),
              help="Seconds a build may take [600].")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
              show_default=True, help="Where to run; 'cpu' forces the no-GPU path.")
@click.option("--seed", type=click.IntRange(min=0),
              help="Seed for the random inputs (default: new each run).")
@click.option("--out", type=click.Path(file_okay=False), callback=lambda c, p, v: _folder(v),
              help="Folder for this run's results (default: profiles/<run-id>).")
@click.option("--force", is_flag=True,
              help="Reuse an --out folder that already holds results (they are replaced).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--ncu", "with_ncu", is_flag=True,
              help="Also profile each passing variant once with Nsight Compute (short summary).")
@click.option("--markdown", "markdown", is_flag=True,
              help="Also print every group's table as markdown on stdout at the end (a PR "
                   "comment); not with --json.")
@click.option("--ncu-check", "ncu_check", is_flag=True,
              help="Also time each passing point under Nsight Compute (duration only, one ncu "
                   "run per group) and add a 'vs ncu' column; needs ncu and a CUDA GPU.")
@click.option("--sanitize", "with_sanitize", is_flag=True,
              help="Also run each variant once under compute-sanitizer's memcheck before "
                   "timing, and mark rows it found errors in (needs a CUDA GPU).")
@click.option("--report", "with_report", is_flag=True,
              help="Also write the run's HTML report (report.html in the run folder; see "
                   "`gpubench report`).")
@click.option("--trace", "with_trace", is_flag=True,
              help="Also write a Chrome trace of the passing variants (trace.json).")
@click.option("--baseline", metavar="RUN",
              help="Compare every point with an earlier run (a run folder, 'latest', "
                   "'latest~1'): adds the change and the verdict of `gpubench compare`.")
@click.option("--devices", metavar="all|0,2,3",
              help="Run on several GPUs at once: one worker per GPU, points shared out "
                   "(after an interference check); results say which GPU measured them.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Run N CPU workers at once (no-GPU runs), or size a --cluster local on "
                   "the CPU.")
@click.option("--cluster", metavar="ADDRESS|local",
              help="Send points to Dask workers, each owning one GPU (resource GPU=1): a "
                   "scheduler's address, or 'local' to start one worker per GPU here. "
                   "Needs gpubench[cluster].")
def run(config_path, device, out, force, as_json, with_ncu, markdown, ncu_check, with_sanitize,
        with_report, with_trace, baseline, devices, workers, cluster, **options):
    """Check, time and compare every variant of kernel FAMILIES (default: all)."""
    parallel = {"devices": devices, "workers": workers, "cluster": cluster}
    _guarded(lambda: _run(config_path, options, device, out, force, as_json, with_ncu,
                          with_trace, baseline, ncu_check, markdown, with_report,
                          with_sanitize, parallel))


def _run(config_path, options: dict, device: str, out, force: bool, as_json: bool,
         with_ncu: bool, with_trace: bool, baseline: str | None, ncu_check: bool,
         markdown: bool, with_report: bool, with_sanitize: bool, parallel: dict) -> int:
    from gpubench.commands.run import RunCommand, RunRequest

    if markdown and as_json:
        raise errors.UsageError("--markdown and --json both print on stdout: choose one")
    config = merge_options(load_config(config_path) if config_path else RunConfig(), options)
    console = make_console(stderr=as_json)
    request = RunRequest(config, device, out, as_json, with_ncu, with_trace, force, baseline,
                         ncu_check, markdown, with_report, with_sanitize, **parallel)
    return RunCommand(request, console).execute()


def _folder(value: str | None) -> Path | None:
    """--out: a folder name; '' would silently mean the current folder."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("needs a folder name (an empty one would write into the "
                                 "current folder)")
    return Path(value)


def _flag(key: str) -> str:
    """The option a suite-file key comes from: max_time_ms -> --max-time, modes -> --mode."""
    name = key.removesuffix("_ms").removesuffix("_pct").removesuffix("_s")
    return "--" + ("mode" if name == "modes" else name.replace("_", "-"))


def one_shape(size: str | None, shape: str | None) -> ShapeChoice:
    """A profiler's --size or --shape (one of them, or neither: the default shape)."""
    if size and shape:
        raise errors.UsageError("give --size or --shape, not both")
    if size:
        return ShapeChoice(sizes=(parse_size(size),))
    return ShapeChoice(shapes=(parse_shape(shape),)) if shape else ShapeChoice()


def merge_options(config: RunConfig, options: dict) -> RunConfig:
    """Command-line options over a suite file's values."""

    def fail(key: str | None, exc: Exception):
        where = f"{_flag(key)}: " if key else ""
        raise errors.UsageError(f"{where}{exc}") from None

    changes: dict = {"timing": with_user_values(config.timing, {
        **options, "modes": options.get("modes") or None}, fail)}
    if options.get("families"):
        changes["families"] = split_names(options["families"])
    choice = shape_choice(options.get("sizes"), options.get("shapes") or (),
                          options.get("axes") or ())
    if choice:
        changes["shapes"] = choice
    if options.get("dtypes"):
        names = split_names(options["dtypes"])
        changes["dtypes"] = ("all",) if "all" in names else parse_dtypes(names)
    if options.get("variants"):
        changes["variants"] = split_names(options["variants"])
    if options.get("kernels_dirs"):
        changes["kernels_dirs"] = (*config.kernels_dirs, *options["kernels_dirs"])
    if options.get("seed") is not None:
        changes["seed"] = options["seed"]
    return replace(config, **changes)


# ------------------------------------------------------------------ compare


@cli.command()
@click.argument("base")
@click.argument("new")
@click.option("--threshold", "threshold_pct", type=click.FloatRange(min=0, min_open=True),
              default=1.0, show_default=True,
              help="Changes within +-this %% count as SAME; a FASTER/SLOWER must exceed it.")
@click.option("--fail-on-regression", is_flag=True,
              help=f"Exit {errors.EXIT_REGRESSION} when any point is SLOWER (for CI gates).")
@click.option("--markdown", is_flag=True, help="Print a markdown table (for a PR comment).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare(base, new, threshold_pct, fail_on_regression, markdown, as_json):
    """Is NEW faster than BASE, really? Two runs (run folders, 'latest', 'latest~1') joined
    point by point: both medians, the change with its 95% CI, and a verdict (FASTER,
    SLOWER, SAME, UNSURE) with its reason."""
    from gpubench.commands.compare import compare_command

    _guarded(lambda: compare_command(base, new, threshold_pct / 100, fail_on_regression,
                                     markdown, as_json, make_console()))


# ------------------------------------------------------------------ report


@cli.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file [report.html in the (last) run's folder].")
@click.option("--markdown", is_flag=True,
              help="Print the tables (and comparisons) as markdown on stdout instead; with "
                   "-o, write the HTML too.")
def report(runs, output, markdown):
    """One offline HTML page of RUNS (run folders, 'latest', 'latest~1'): environment,
    sortable tables, roofline and sweep charts, failures; each later run compared with the
    first."""
    from gpubench.commands.report import report_command

    _guarded(lambda: report_command(runs, output, markdown, make_console()))


# ------------------------------------------------------------------ list


@cli.command("list")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
              show_default=True, help="Judge 'runs here' for this device.")
def list_command(kernels_dirs, device):
    """Show kernel families, their variants and dtypes, and whether each can run here."""
    from gpubench.commands.listing import list_families

    _guarded(lambda: list_families(kernels_dirs, device, make_console()))


# ------------------------------------------------------------------ peak


@cli.command()
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
              show_default=True, help="Which device's ceilings.")
@click.option("--force", is_flag=True, help="Measure again even if cached.")
@click.option("--json", "as_json", is_flag=True, help="Print the ceilings as JSON.")
def peak(device, force, as_json):
    """Measure this machine's ceilings (copy bandwidth, matmul TFLOP/s per dtype), once.

    Every result's 'of roof' column and roofline placement use them; they are cached
    per GPU model, driver and torch version."""
    from gpubench.commands.peak import show_peaks

    _guarded(lambda: show_peaks(device, force, as_json, make_console()))


# ------------------------------------------------------------------ ncu


@cli.command()
@click.argument("family", required=False)
@click.option("--variant", "variants", multiple=True,
              help="Variant(s) to profile (default: every one that runs here); repeatable.")
@click.option("--size", help="One size (default: the family's largest default shape).")
@click.option("--shape", help="One shape, e.g. M=16,N=4096,K=4096 (instead of --size).")
@click.option("--dtype", help="One dtype (default float32).")
@click.option("--set", "set_name", default="hints", show_default=True,
              help="ncu section set: 'hints' (the sections behind ncu's advice), or an ncu "
                   "set such as full, detailed, basic.")
@click.option("--section", "sections", multiple=True, help="Extra ncu section id (repeatable).")
@click.option("--metrics", help="Extra metrics, comma-separated.")
@click.option("--ncu-path", help="The ncu executable (default: PATH, then /usr/local/cuda).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=600,
              show_default=True, help="Seconds one ncu run may take before it is killed.")
@click.option("--clock-control", type=click.Choice(["none", "base"]), default="none",
              show_default=True, help="ncu's clock control; 'none' leaves clocks as found.")
@click.option("--info", "include_info", is_flag=True, help="Also show INF rule results.")
@click.option("--import", "import_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Show an existing .ncu-rep instead of profiling (no GPU needed).")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the reports (default: profiles/<run-id>).")
@click.option("--json", "as_json", is_flag=True, help="Metrics and hints as JSON on stdout.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write metrics and hints as CSV rows to this file.")
def ncu(family, variants, size, shape, dtype, set_name, sections, metrics, ncu_path, timeout_s,
        clock_control, include_info, import_path, kernels_dirs, out, as_json, csv_path):
    """Nsight Compute on FAMILY's variants: speed of light and ncu's hints, ranked."""
    from gpubench.commands.ncu import NcuCommand, NcuOptions

    def body() -> int:
        options = NcuOptions(set_name, tuple(sections), split_names(metrics), ncu_path,
                             timeout_s, clock_control, include_info)
        command = NcuCommand(family, split_names(variants), one_shape(size, shape),
                             parse_dtype(dtype) if dtype else None, tuple(kernels_dirs),
                             options, import_path, out, as_json, csv_path,
                             make_console(stderr=as_json))
        return command.execute()

    _guarded(body)


# ------------------------------------------------------------------ nsys


@cli.command()
@click.argument("family")
@click.option("--variant", "variants", multiple=True,
              help="Variant(s) to profile (default: every one that runs here); repeatable.")
@click.option("--size", help="One size (default: the family's largest default shape).")
@click.option("--shape", help="One shape, e.g. M=16,N=4096,K=4096 (instead of --size).")
@click.option("--dtype", help="One dtype (default float32).")
@click.option("--nsys-path", help="The nsys executable (default: PATH, then NVIDIA's folders).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=120,
              show_default=True, help="Seconds one nsys run may take before it is killed.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the reports (default: profiles/<run-id>).")
@click.option("--json", "as_json", is_flag=True, help="Kernels and NVTX ranges as JSON.")
def nsys(family, variants, size, shape, dtype, nsys_path, timeout_s, kernels_dirs, out, as_json):
    """Nsight Systems on FAMILY's variants: the measured call's kernels and NVTX range."""
    from gpubench.commands.nsys import NsysCommand, NsysOptions

    def body() -> int:
        return NsysCommand(family, split_names(variants), one_shape(size, shape),
                           parse_dtype(dtype) if dtype else None,
                           NsysOptions(nsys_path, timeout_s), out, as_json,
                           make_console(stderr=as_json), tuple(kernels_dirs)).execute()

    _guarded(body)


# ------------------------------------------------------------------ sanitize


@cli.command()
@click.argument("family")
@click.option("--tool", "tools", multiple=True,
              help="memcheck (default), racecheck, initcheck, synccheck, or 'all'; repeatable "
                   "or comma-separated.")
@click.option("--variant", "variants", multiple=True,
              help="Variant(s) to check (default: every one that runs here); repeatable.")
@click.option("--size", help="One size (default: the family's smallest default shape).")
@click.option("--shape", help="One shape, e.g. M=16,N=4096,K=4096 (instead of --size).")
@click.option("--dtype", help="One dtype (default float32).")
@click.option("--sanitizer-path", help="The compute-sanitizer executable (default: PATH, then "
                                       "/usr/local/cuda/bin).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=600,
              show_default=True, help="Seconds one tool run (build included) may take.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the XML records and logs (default: profiles/<run-id>).")
@click.option("--json", "as_json", is_flag=True, help="Findings as JSON on stdout.")
def sanitize(family, tools, variants, size, shape, dtype, sanitizer_path, timeout_s,
             kernels_dirs, out, as_json):
    """compute-sanitizer on FAMILY's variants: out-of-bounds and misaligned accesses
    (memcheck), shared-memory races (racecheck), uninitialised reads (initcheck), barrier
    misuse (synccheck), each at its line in your source. Exit 14 when anything is found."""
    from gpubench.commands.sanitize import SanitizeCommand

    def body() -> int:
        return SanitizeCommand(family, split_names(variants), one_shape(size, shape),
                               parse_dtype(dtype) if dtype else None, tuple(kernels_dirs),
                               tuple(tools), sanitizer_path, timeout_s, out, as_json,
                               make_console(stderr=as_json)).execute()

    _guarded(body)


# ------------------------------------------------------------------ profile


@cli.command(context_settings={**CONTEXT, "ignore_unknown_options": True,
                               "allow_interspersed_args": False})
@click.option("--range", "region", metavar="NAME",
              help="Only the kernels launched inside this record_function/NVTX range (default: "
                   "the program's gpubench.region() ranges if it has any, else everything).")
@click.option("--skip-first", type=click.IntRange(min=0), default=0, show_default=True,
              help="Leave out the range's first N instances (warm-up steps, compilation).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=1800,
              show_default=True, help="Seconds the program may run; then its whole process "
                                      "tree is stopped (what it recorded is kept).")
@click.option("--ncu", "with_ncu", is_flag=True,
              help="Then run the program under Nsight Compute once per top kernel (its first "
                   "launch in the region) and show ncu's view of each.")
@click.option("--top", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many kernels --ncu profiles.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the trace and tables (default: profiles/<run-id>).")
@click.option("--json", "as_json", is_flag=True, help="The analysis as JSON on stdout.")
@click.argument("program", nargs=-1, type=click.UNPROCESSED)
def profile(region, skip_first, timeout_s, with_ncu, top, out, as_json, program):
    """Profile any Python program: gpubench profile [OPTIONS] -- python train.py ARGS.
    Its kernels by time (who wrote them, the ranges they ran under), how busy the GPU was
    and its largest idle gaps; with --ncu, Nsight Compute's advice on the top kernels."""
    from gpubench.commands.profile import ProfileCommand

    _guarded(lambda: ProfileCommand(tuple(program), region, skip_first, timeout_s, with_ncu,
                                    top, out, as_json, make_console(stderr=as_json)).execute())


# ------------------------------------------------------------------ trace


@cli.command()
@click.argument("families", nargs=-1)
@shape_options
@click.option("--dtype", "dtypes", multiple=True, help="Dtype(s), as for run (default float32).")
@click.option("--variants", multiple=True, help="Only these variants (repeatable).")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--iterations", type=click.IntRange(min=1), default=5, show_default=True,
              help="Calls of each variant recorded in the trace.")
@click.option("--gzip", "compress", is_flag=True, help="Write trace.json.gz instead.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=600,
              show_default=True, help="Seconds the tracing may take.")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
              show_default=True, help="Where to run.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for trace.json (default: profiles/<run-id>).")
def trace(families, sizes, shapes, axes, dtypes, variants, kernels_dirs, iterations, compress,
          timeout_s, device, out):
    """A Chrome/Perfetto trace of each variant (torch.profiler), with a kernel summary."""
    from gpubench.commands.trace import TraceCommand

    def body() -> int:
        names = split_names(dtypes)
        chosen_dtypes = (("all",) if "all" in names else parse_dtypes(names)) if names else None
        return TraceCommand(split_names(families), shape_choice(sizes, shapes, axes),
                            chosen_dtypes, split_names(variants), tuple(kernels_dirs),
                            iterations, compress, timeout_s, out, device,
                            make_console()).execute()

    _guarded(body)


# ------------------------------------------------------------------ plumbing


def _guarded(action) -> None:
    """Run a command body; turn gpubench errors into one line and an exit code. SIGTERM
    and SIGHUP stop it the way Ctrl-C does (results so far written, workers killed)."""
    err = Console(stderr=True, highlight=False)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_terminated)
    try:
        code = action()
    except errors.GpubenchError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        err.print(str(exc) or "interrupted")
        sys.exit(errors.interruption_code(exc))
    sys.exit(code or 0)


def _raise_terminated(signum, frame) -> None:
    # Once: a second signal during the clean-up must not interrupt the clean-up.
    signal.signal(signum, signal.SIG_IGN)
    raise errors.Terminated(signum)


def make_console(stderr: bool = False) -> Console:
    """A console for tables; 120 columns when writing to a file or pipe (CI logs, tee),
    where rich would otherwise assume 80 and fold every table."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, highlight=False, width=120)
    return console


def main() -> None:
    cli(prog_name="gpubench")

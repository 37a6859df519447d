"""The command line's shared options, each defined once (flag, type, help) and applied by name,
and the functions that turn their raw values into the typed values the commands take.

A decorator here is one option, or one group of options that always go together (the timing
settings, the shapes to run, a profiler's target). Where commands word an option differently
on purpose (what --json prints, what --out holds), the decorator takes that part of the help
as its argument; the flag, type and default stay here. Raw values are parsed inside the
command's guarded body (guard.guarded), not in click callbacks, so that a bad value is one
line and gpubench's exit code, never click's.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import click

from gpubench import errors
from gpubench.families.compiled import MODES as COMPILE_MODES
from gpubench.parsing import parse_dtype, parse_dtypes, parse_size, parse_sizes, split_names
from gpubench.records.shape import ShapeChoice, parse_axis, parse_shape
from gpubench.run.config import RunConfig
from gpubench.timing.settings import with_user_values

DEVICES = ["auto", "cuda", "cpu"]


def stacked(*options):
    """One decorator from several, listed in the order --help shows them."""

    def apply(command):
        for option in reversed(options):
            command = option(command)
        return command

    return apply


# ---------------------------------------------------------------- types


class FiniteFloat(click.FloatRange):
    """A float option's type that refuses nan and inf, click's usage error (exit 2) naming the
    option given. Every float option uses it: a range alone lets nan through (every comparison
    with nan is false), and a nan threshold or timing setting fails later, under another
    name or not at all (a nan --threshold never flags a change)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


# ---------------------------------------------------------------- single options

kernels_dir_option = click.option(
    "--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
    help="A folder of your own kernel families (repeatable).")


problem_options = stacked(
    click.option("--problem", type=click.Path(path_type=Path),
                 help="A leaderboard problem run as a family: a GPU MODE reference-kernels "
                      "problem folder, or a KernelBench problem file (guide: 'Leaderboard "
                      "problems')."),
    click.option("--submission", "submissions", multiple=True,
                 type=click.Path(path_type=Path),
                 help="A submission to --problem (custom_kernel, or ModelNew), a variant "
                      "beside the problem's reference; repeatable."),
)


def threshold_option(default_pct: float, help_text: str):
    """--threshold, in percent (commands take it as a fraction: threshold_pct / 100)."""
    return click.option("--threshold", "threshold_pct", default=default_pct,
                        type=FiniteFloat(min=0, min_open=True), show_default=True,
                        help=help_text)


def json_option(what: str):
    """--json; `what`: what it prints, which differs per command."""
    return click.option("--json", "as_json", is_flag=True, help=what)


def out_option(what: str, refuse_empty: bool = False):
    """--out FOLDER for `what`. `refuse_empty`: '' is a usage error rather than the current
    folder (only `run` checks it today; the others keep their behaviour)."""
    help_text = f"Folder for {what} (default: profiles/<run-id>)."
    if refuse_empty:
        return click.option("--out", type=click.Path(file_okay=False),
                            callback=lambda c, p, v: folder(v), help=help_text)
    return click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                        help=help_text)


def timeout_option(help_text: str, default: float | None = None):
    """--timeout SECONDS; each command times a different thing, so help and default differ."""
    return click.option("--timeout", "timeout_s", type=FiniteFloat(min=1), default=default,
                        show_default=default is not None, help=help_text)


def device_option(help_text: str = "Where to run; 'cpu' forces the no-GPU path."):
    return click.option("--device", type=click.Choice(DEVICES), default="auto",
                        show_default=True, help=help_text)


# ---------------------------------------------------------------- groups

timing_options = stacked(
    click.option("--mode", "modes", multiple=True,
                 help="Timing mode(s): cold (default), warm, graph, cupti, wall, or 'all'; "
                      "repeatable or comma-separated."),
    click.option("--warmup", "warmup_ms", type=FiniteFloat(min=0),
                 help="Warmup per point and mode, ms [100]."),
    click.option("--min-time", "min_time_ms", type=FiniteFloat(min=0),
                 help="Sample for at least this long, ms [50]."),
    click.option("--max-time", "max_time_ms", type=FiniteFloat(min=1),
                 help="Stop sampling after this long even if not converged, ms [500]."),
    click.option("--target-ci", "target_ci_pct", type=FiniteFloat(min=0, min_open=True),
                 help="Stop once the 95% CI of the median is within +-this % [0.5]."),
    click.option("--min-samples", type=click.IntRange(min=1), help="Fewest samples [10]."),
    click.option("--max-samples", type=click.IntRange(min=1), help="Most samples [10000]."),
    click.option("--remeasure-throttled", is_flag=True, default=None,
                 help="Measure again once if clocks slowed down (thermal/HW) meanwhile."),
)
"""The options that shape one measurement (run's; a suite file may set them too)."""

shape_options = stacked(
    click.option("--sizes", help="Comma-separated sizes, e.g. 1024,4096, 2^20, 4k, 1M: one "
                                 "axis, or every axis where the family says how (matmul: "
                                 "M=N=K). Default: the family's shapes."),
    click.option("--shape", "shapes", multiple=True,
                 help="A whole shape, e.g. M=16,N=4096,K=4096 (repeatable)."),
    click.option("--axis", "axes", multiple=True,
                 help="Sweep an axis, e.g. K=64,128,256 (repeatable: the cartesian "
                      "product; other axes at their defaults)."),
)
"""--sizes, --shape and --axis: which shapes to run."""

selection_options = stacked(
    click.argument("families", nargs=-1),
    shape_options,
    click.option("--dtype", "dtypes", multiple=True,
                 help="float32, float16/fp16, bfloat16/bf16, or 'all'; repeatable or "
                      "comma-separated."),
    click.option("--variants", multiple=True,
                 help="Only these variants (the baseline runs too); repeatable or "
                      "comma-separated."),
)
"""Which points to run: FAMILIES, their shapes, dtypes and variants (run and trace)."""


def target_options(verb: str, which_shape: str):
    """A profiler's target: FAMILY (or --problem, which names it), --variant, and one --size
    or --shape and --dtype.
    `verb` (profile, check) and `which_shape` (largest, smallest) say what the tool does
    with them: a profiler wants a shape that fills the GPU, a checker a small one."""
    return stacked(
        click.argument("family", required=False),
        click.option("--variant", "variants", multiple=True,
                     help=f"Variant(s) to {verb} (default: every one that runs here); "
                          "repeatable."),
        click.option("--size", help=f"One size (default: the family's {which_shape} default "
                                    "shape)."),
        click.option("--shape", help="One shape, e.g. M=16,N=4096,K=4096 (instead of --size)."),
        click.option("--dtype", help="One dtype (default float32)."),
    )


run_extra_options = stacked(
    click.option("--ncu", is_flag=True,
                 help="Also profile each passing variant once with Nsight Compute (short "
                      "summary)."),
    click.option("--markdown", is_flag=True,
                 help="Also print every group's table as markdown on stdout at the end (a PR "
                      "comment); not with --json."),
    click.option("--ncu-check", is_flag=True,
                 help="Also time each passing point under Nsight Compute (duration only, one ncu "
                      "run per group) and add a 'vs ncu' column; needs ncu and a CUDA GPU."),
    click.option("--sanitize", is_flag=True,
                 help="Also run each variant once under compute-sanitizer's memcheck before "
                      "timing, and mark rows it found errors in (needs a CUDA GPU)."),
    click.option("--report", is_flag=True,
                 help="Also write the run's HTML report (report.html in the run folder; see "
                      "`gpubench report`)."),
    click.option("--trace", is_flag=True,
                 help="Also write a Chrome trace of the passing variants (trace.json)."),
    click.option("--baseline", metavar="RUN",
                 help="Compare every point with an earlier run (a run folder, 'latest', "
                      "'latest~1'): adds the change and the verdict of `gpubench compare`."),
    click.option("--legend/--no-legend", default=True,
                 help="Print the tables' legend (what each column means) once, after the "
                      "last table [--legend]."),
    click.option("-v", "--verbose", is_flag=True,
                 help="Also print the whole traceback or compiler log of each failed point "
                      "(the table shows its file:line; results.json keeps the log either way)."),
)
"""What `run` does besides checking and timing (run only; the names are RunRequest's)."""

ab_options = stacked(
    click.option("--base", type=click.Path(file_okay=False, path_type=Path),
                 help="BASE: a folder holding the family (its spec.py, or FAMILY/spec.py)."),
    click.option("--base-rev", metavar="REV", help="BASE: NEW's folder at this git revision."),
    click.option("--new", type=click.Path(file_okay=False, path_type=Path),
                 help="NEW: a folder holding the family [the family as found: the working tree]."),
    shape_options,
    click.option("--dtype", "dtypes", multiple=True, help="float32 (default), bf16, ..., 'all'."),
    click.option("--variants", multiple=True, help="Only these variants (comma-separated)."),
    timing_options,
    threshold_option(0.5, "Changes within +-this % count as SAME; a FASTER/SLOWER must "
                     "exceed it (and the controls' drift)."),
    click.option("--fail-on-regression", is_flag=True,
                 help=f"Exit {errors.EXIT_REGRESSION} when a point is SLOWER, or FAILED or "
                      "SUSPECT on a side."),
    click.option("--markdown", is_flag=True, help="Also print the table as markdown."),
    click.option("--seed", type=click.IntRange(min=0), help="Seed for the random inputs [0]."),
    click.option("--budget", "budget_s", type=FiniteFloat(min=0), metavar="SECONDS",
                 help="Seconds the whole A/B may add beyond --max-time, shared over its "
                      "points, so that long kernels reach the blocks a verdict needs "
                      "instead of an UNSURE [10x --max-time a point]."),
    click.option("--threshold-from-aa", is_flag=True,
                 help="Each point's threshold from its A/A on this device model (`ab --aa`):"
                      " what two identical sides read apart there (|A/A change| + 1.645 "
                      "standard errors, at least 0.1%); SAME stays within --threshold. "
                      "Points without one keep --threshold."),
    click.option("--explain", is_flag=True,
                 help="Profile both sides of each FASTER or SLOWER point with ncu (one run "
                      "a side) and show the counters that moved, ranked by their share of "
                      "the time change, and ncu's hints that came or went. Needs a GPU."),
    click.option("--aa", is_flag=True,
                 help="Calibrate: the family against an identical copy of itself. Per point, "
                      "the smallest change an A/B decides at 80% power in the time given, "
                      "and any false verdict; kept per device model, so a later ab says "
                      "when an UNSURE change is below what its point resolves."),
)
"""`gpubench ab`'s: the two versions, what to pair, the threshold, the exit on a regression."""

bisect_options = stacked(
    click.option("--good", required=True, metavar="REV",
                 help="A revision where FAMILY was fast."),
    click.option("--bad", required=True, metavar="REV",
                 help="A later revision where it is slow."),
    shape_options,
    click.option("--dtype", "dtypes", multiple=True, help="float32 (default), bf16, ..., 'all'."),
    click.option("--variants", multiple=True, help="Only these variants (comma-separated)."),
    timing_options,
    threshold_option(0.5, "Changes within +-this % count as SAME; a probe is SLOWER beyond it."),
    click.option("--markdown", is_flag=True, help="Also print the finding as markdown."),
    click.option("--explain", is_flag=True,
                 help="Profile the culprit and its parent with ncu (the confirming A/B's "
                      "--explain): the counters that moved, ranked by share of the time."),
)
"""`gpubench bisect`'s: the range, what to pair, the threshold."""

history_check_options = stacked(
    click.option("--check", is_flag=True,
                 help="Exit 13 when a series' newest runs stepped slower (a nightly job)."),
    click.option("--confirm", is_flag=True,
                 help="With --check: A/B each flagged step's two commits now; exit 13 only "
                      "for a step the A/B confirms (SLOWER)."),
)
"""`history --check [--confirm]`: the nightly gate, and the A/B behind each alarm."""

history_backfill_options = stacked(
    click.option("--backfill", metavar="A..B",
                 help="First run FAMILY at each commit of A..B that changed its folder "
                      "(exported from git, oldest first), as a nightly job would have: a "
                      "series from the repository's past."),
    kernels_dir_option,
)
"""`history --backfill A..B`: a new user's series from an existing repository."""

history_output_options = stacked(
    click.option("--markdown", type=click.Path(dir_okay=False, allow_dash=True,
                                               path_type=Path),
                 help="Also write a markdown summary of the change points ('-': stdout)."),
    click.option("--html", type=click.Path(dir_okay=False, path_type=Path),
                 help="Also write the history page: a chart per series, offline."),
    click.option("--export", type=click.Path(dir_okay=False, path_type=Path),
                 help="Also write the chosen rows as .csv or .parquet, for a notebook."),
    click.option("--rebuild", is_flag=True, help="Read every run folder again into the store."),
)
"""What `history` writes besides its lines, and --rebuild."""

compiled_options = stacked(
    click.option("--compiled/--no-compiled", "compiled", default=None,
                 help="Add the `compiled` variant, torch.compile of each family's reference "
                      "(the compiler's kernel, the bar to beat), or leave it out. Default: on "
                      "a GPU yes; on a CPU no (Inductor compiles C++ for each shape, ~20 s "
                      "each on 2 cores)."),
    click.option("--compile-mode", type=click.Choice(COMPILE_MODES), default="default",
                 show_default=True, help="torch.compile's mode for the `compiled` variant."),
)
"""The compiler's own variant in every family (families/compiled.py; run only)."""

watch_option = click.option(
    "--watch", is_flag=True,
    help="Run, then watch the families' files: on every save, run the variants the saved "
         "files affect again and print one line per point against the last good iteration "
         "and the first (compare's verdicts). Ctrl-C ends it; every iteration is a run "
         "folder (<session>/iter-NNN).")
"""`run --watch`: the edit-measure loop (commands/watch.py)."""

parallel_options = stacked(
    click.option("--devices", metavar="all|0,2,3",
                 help="Run on several GPUs at once: one worker per GPU, points shared out "
                      "(after an interference check); results say which GPU measured them."),
    click.option("--workers", type=click.IntRange(min=1), metavar="N",
                 help="Run N CPU workers at once (no-GPU runs), or size a --cluster local on "
                      "the CPU."),
    click.option("--cluster", metavar="ADDRESS|local",
                 help="Send points to Dask workers, each owning one GPU (resource GPU=1): a "
                      "scheduler's address, or 'local' to start one worker per GPU here. "
                      "Needs gpubench[cluster]."),
)
"""Where `run` spreads its points: several GPUs, CPU workers, or a Dask cluster (run only)."""


# ---------------------------------------------------------------- raw values -> typed values


def folder(value: str | None) -> Path | None:
    """--out: a folder name; '' would silently mean the current folder."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter("needs a folder name (an empty one would write into the "
                                 "current folder)")
    return Path(value)


def shape_choice(sizes: str | None, shapes: tuple[str, ...], axes: tuple[str, ...]) -> ShapeChoice:
    """The command line's shape options as one ShapeChoice (empty: the defaults)."""
    swept = dict(parse_axis(text) for text in axes)
    return ShapeChoice(sizes=parse_sizes(sizes) if sizes is not None else (),
                       shapes=tuple(parse_shape(text) for text in shapes),
                       axes=tuple(swept.items()))


def one_shape(size: str | None, shape: str | None) -> ShapeChoice:
    """A profiler's --size or --shape (one of them, or neither: the default shape)."""
    if size and shape:
        raise errors.UsageError("give --size or --shape, not both")
    if size:
        return ShapeChoice(sizes=(parse_size(size),))
    return ShapeChoice(shapes=(parse_shape(shape),)) if shape else ShapeChoice()


def one_dtype(dtype: str | None) -> str | None:
    """A profiler's --dtype (None: the family's default)."""
    return parse_dtype(dtype) if dtype else None


def chosen_dtypes(dtypes: tuple[str, ...]) -> tuple[str, ...]:
    """--dtype, repeatable or comma-separated: ('all',) or the canonical names (a usage
    error when it names none)."""
    names = split_names(dtypes)
    return ("all",) if "all" in names else parse_dtypes(names)


def _flag(key: str) -> str:
    """The option a suite-file key comes from: max_time_ms -> --max-time, modes -> --mode."""
    name = key.removesuffix("_ms").removesuffix("_pct").removesuffix("_s")
    return "--" + ("mode" if name == "modes" else name.replace("_", "-"))


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
        changes["dtypes"] = chosen_dtypes(options["dtypes"])
    if options.get("variants"):
        changes["variants"] = split_names(options["variants"])
    if options.get("kernels_dirs"):
        changes["kernels_dirs"] = (*config.kernels_dirs, *options["kernels_dirs"])
    if options.get("seed") is not None:
        changes["seed"] = options["seed"]
    return replace(config, **changes)


def take_problem(options: dict) -> str | None:
    """--problem and --submission, taken out of `options`: the problem made a family folder
    (families/leaderboard/) added to --kernels-dir; its family name, None without one."""
    problem, submissions = options.pop("problem", None), options.pop("submissions", ())
    if problem is None:
        if submissions:
            raise errors.UsageError("--submission needs --problem (the problem it solves)")
        return None
    from gpubench.families.leaderboard import prepare

    name, folder = prepare(problem, tuple(submissions))
    options["kernels_dirs"] = (*options.get("kernels_dirs", ()), folder)
    return name


def target_choice(options: dict, required: bool = True):
    """A profiler's target (target_options, --kernels-dir, --problem), taken out
    of `options`; inside the guarded body, since a bad size or dtype is a UsageError.
    `required`: FAMILY or --problem must name one (ncu's --import needs neither)."""
    from gpubench.commands.targets import TargetChoice

    problem = take_problem(options)
    family = options.pop("family") or problem
    if family is None and required:
        raise errors.UsageError("name a kernel family (FAMILY) or a --problem")
    return TargetChoice(family, split_names(options.pop("variants")),
                        one_shape(options.pop("size"), options.pop("shape")),
                        one_dtype(options.pop("dtype")), tuple(options.pop("kernels_dirs")))

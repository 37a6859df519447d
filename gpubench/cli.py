"""The `gpubench` command line. Each command parses, delegates, and maps errors to exit codes.

This is the only module that prints errors and chooses exit statuses: bad
input becomes one line on stderr and a non-zero code (see errors.py), never a
traceback.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console

from gpubench import errors
from gpubench.config import RunConfig, load_config
from gpubench.parsing import parse_dtypes, parse_sizes, split_names

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="gpubench")
def cli() -> None:
    """Benchmark and profile GPU kernels: check every variant against a reference,
    time it honestly, and compare it with PyTorch/cuBLAS."""


# ------------------------------------------------------------------ run


@cli.command()
@click.argument("families", nargs=-1)
@click.option("--sizes",
              help="Comma-separated sizes, e.g. 1024,4096 or 2^20 (default: the family's).")
@click.option("--dtype", "dtypes", multiple=True,
              help="float32, float16/fp16, bfloat16/bf16, or 'all'; repeatable or comma-separated.")
@click.option("--variants", multiple=True,
              help="Only these variants (the baseline runs too); repeatable or comma-separated.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A suite file (configs/*.toml); command-line options override it.")
@click.option("--kernels-dir", "kernels_dirs", multiple=True, type=click.Path(path_type=Path),
              help="A folder of your own kernel families (repeatable).")
@click.option("--warmup", "warmup_ms", type=click.FloatRange(min=0),
              help="Warmup per point, ms [100].")
@click.option("--budget", "budget_ms", type=click.FloatRange(min=0),
              help="Sampling time per point, ms [400].")
@click.option("--min-samples", type=click.IntRange(min=1), help="Fewest samples per point [5].")
@click.option("--no-flush", is_flag=True,
              help="Do not flush L2 between samples (warm-cache times).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1),
              help="Seconds a point may take outside its build before it counts as hung [120].")
@click.option("--build-timeout", "build_timeout_s", type=click.FloatRange(min=1),
              help="Seconds a build may take [600].")
@click.option("--device", type=click.Choice(["auto", "cuda", "cpu"]), default="auto",
              show_default=True, help="Where to run; 'cpu' forces the no-GPU path.")
@click.option("--seed", type=click.IntRange(min=0),
              help="Seed for the random inputs (default: new each run).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for this run's results (default: profiles/<run-id>).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def run(families, sizes, dtypes, variants, config_path, kernels_dirs, warmup_ms, budget_ms,
        min_samples, no_flush, timeout_s, build_timeout_s, device, seed, out, as_json):
    """Check, time and compare every variant of kernel FAMILIES (default: all)."""
    options = dict(families=families, sizes=sizes, dtypes=dtypes, variants=variants,
                   kernels_dirs=kernels_dirs, warmup_ms=warmup_ms, budget_ms=budget_ms,
                   min_samples=min_samples, no_flush=no_flush, timeout_s=timeout_s,
                   build_timeout_s=build_timeout_s, seed=seed)
    _guarded(lambda: _run(config_path, options, device, out, as_json))


def _run(config_path, options: dict, device: str, out, as_json: bool) -> int:
    from gpubench.commands.run import RunCommand

    config = merge_options(load_config(config_path) if config_path else RunConfig(), options)
    console = make_console(stderr=as_json)
    return RunCommand(config, device, out, as_json, console).execute()


def merge_options(config: RunConfig, options: dict) -> RunConfig:
    """Command-line options over a suite file's values."""
    timing = config.timing
    if options.get("warmup_ms") is not None:
        timing = replace(timing, warmup_s=options["warmup_ms"] / 1e3)
    if options.get("budget_ms") is not None:
        timing = replace(timing, budget_s=options["budget_ms"] / 1e3)
    if options.get("min_samples") is not None:
        timing = replace(timing, min_samples=options["min_samples"])
    if options.get("no_flush"):
        timing = replace(timing, flush_l2=False)
    changes: dict = {"timing": timing}
    if options.get("families"):
        changes["families"] = split_names(options["families"])
    if options.get("sizes") is not None:
        changes["sizes"] = parse_sizes(options["sizes"])
    if options.get("dtypes"):
        names = split_names(options["dtypes"])
        changes["dtypes"] = ("all",) if "all" in names else parse_dtypes(names)
    if options.get("variants"):
        changes["variants"] = split_names(options["variants"])
    if options.get("kernels_dirs"):
        changes["kernels_dirs"] = (*config.kernels_dirs, *options["kernels_dirs"])
    for key in ("timeout_s", "build_timeout_s", "seed"):
        if options.get(key) is not None:
            changes[key] = options[key]
    return replace(config, **changes)


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


# ------------------------------------------------------------------ plumbing


def _guarded(action) -> None:
    """Run a command body; turn gpubench errors into one line and an exit code."""
    err = Console(stderr=True, highlight=False)
    try:
        code = action()
    except errors.GpubenchError as exc:
        err.print(f"[bold red]error:[/] {exc}", markup=True, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(errors.EXIT_INTERRUPTED)
    sys.exit(code or 0)


def make_console(stderr: bool = False) -> Console:
    """A console for tables; 120 columns when writing to a file or pipe (CI logs, tee),
    where rich would otherwise assume 80 and fold every table."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, highlight=False, width=120)
    return console


def main() -> None:
    cli(prog_name="gpubench")

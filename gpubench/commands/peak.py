"""`gpubench peak`: measure (or show the cached) ceilings of this machine. Cached ones are
checked by a short copy probe first, and a disagreement is said (gpubench/timing/ceilings.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpubench import errors
from gpubench.format import rate as rate_text
from gpubench.records.strict_json import strict_dumps
from gpubench.run.lanes.lane import cpu_threads
from gpubench.run.machine import detect_machine
from gpubench.timing.ceilings import Ceilings, cache_dir, load_checked
from gpubench.timing.envinfo import device_env
from gpubench.timing.precision import PRECISIONS


@dataclass(frozen=True)
class PeakRequest:
    """What `gpubench peak` was asked for, built once by the CLI."""

    device: str = "auto"  # which device's ceilings
    force: bool = False  # measure again even if cached
    as_json: bool = False  # the ceilings as JSON on stdout


def execute(request: PeakRequest, console: Console) -> int:
    machine = detect_machine(request.device)
    if machine.device == "cpu":  # a run's CPU worker's threads: its ceilings, its cache key
        import torch

        torch.set_num_threads(cpu_threads(os.cpu_count() or 1))
    env = device_env(machine.device)
    force, as_json = request.force, request.as_json
    if not as_json:
        console.print(f"{'Measuring' if force else 'Loading or measuring'} the ceilings of "
                      f"{env.get('gpu') or 'this CPU'} ...")
    ceilings, check = load_checked(env, force=force, probe=probe_enabled())
    if as_json:
        if check and check.get("stale"):  # stderr: stdout stays one JSON document
            _say_check(check, Console(stderr=True, highlight=False, emoji=False))
        print(strict_dumps(ceilings.to_dict()))
        return errors.EXIT_OK
    console.print(ceilings_table(ceilings))
    curve = curve_table(ceilings)
    if curve is not None:
        console.print(curve)
    if check:
        _say_check(check, console)
    return errors.EXIT_OK


def ceilings_table(ceilings: Ceilings) -> Table:
    """One row per precision (timing/precision.py), measured or not: its matmul rate and
    ridge point, or 'unknown' and why (fp8 before sm_89, a failed measurement, a cache
    from before the precision was measured); the copy bandwidth in the title."""
    bandwidth = ceilings.bandwidth_gbps
    copy = (f"copy {rate_text(bandwidth)} GB/s" if bandwidth else
            f"copy unknown ({ceilings.unmeasured.get('copy', 'not measured')})")
    table = Table(title=f"Measured ceilings: {ceilings.device}; {copy}", title_justify="left",
                  caption=f"{ceilings.method}; measured {ceilings.measured}; cached in "
                          f"{cache_dir() / (ceilings.key + '.json')}", caption_justify="left")
    for header in ("precision", "matmul TFLOP/s", "ridge FLOP/byte", "computes"):
        table.add_column(header, justify="left" if header in ("precision", "computes")
                         else "right")
    for name, meaning in PRECISIONS.items():
        rate = ceilings.tflops.get(name)
        if rate is None:
            why = ceilings.unmeasured.get(name) or \
                "not measured: the cache predates it (`gpubench peak --force`)"
            table.add_row(name, "unknown", "-", f"{meaning}; {why}")
            continue
        ridge = rate * 1e12 / (bandwidth * 1e9) if bandwidth else None
        table.add_row(name, rate_text(rate), rate_text(ridge), meaning)
    return table


def curve_table(ceilings: Ceilings) -> Table | None:
    """The copy bandwidth by footprint (timing/copy_curve.py), one row per copy: the memory
    roof of a row that moves that many bytes. None for a curve of one point or none (a
    CPU's is its large copy, shown in the title already) unless it failed: then why."""
    curve = ceilings.bandwidth_curve or ()
    failed = ceilings.unmeasured.get("copy_curve")
    if len(curve) < 2 and not failed:
        return None
    table = Table(title="Copy bandwidth by footprint (L2 flushed by reads): the memory roof "
                        "of a row moving that many bytes, never below the large copy's",
                  title_justify="left",
                  caption=f"copy curve unknown: {failed}" if failed else None,
                  caption_justify="left")
    for header in ("bytes moved", "GB/s", "of large copy"):
        table.add_column(header, justify="right")
    headline = ceilings.bandwidth_gbps
    for moved, gbps in curve:
        table.add_row(_mib(moved), rate_text(gbps),
                      f"{gbps / headline:.2f}x" if headline else "-")
    return table


def _mib(nbytes: int) -> str:
    """'4 MiB', '1 GiB': the ladder's sizes are powers of two."""
    return f"{nbytes >> 30} GiB" if nbytes >= 1 << 30 else f"{nbytes / (1 << 20):g} MiB"


def probe_enabled() -> bool:
    """GPUBENCH_CEILINGS=0 skips the ceilings in runs and the copy probe here alike."""
    return os.environ.get("GPUBENCH_CEILINGS", "1") != "0"


def _say_check(check: dict, console: Console) -> None:
    """The copy probe's verdict on the cached ceilings: a disagreement as the warning line
    `gpubench run` prints, an agreement dimmed (the figures are then trustworthy)."""
    if check.get("stale"):
        console.print(f"[yellow]warning:[/] {escape(check['message'])}", soft_wrap=True)
    else:
        console.print(f"[dim]{escape(check['message'])}[/]", soft_wrap=True)

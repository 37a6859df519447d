"""`gpubench peak`: measure (or show the cached) ceilings of this machine."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpubench import errors
from gpubench.ceilings import cache_dir, load_or_measure
from gpubench.envinfo import device_env
from gpubench.machine import detect_machine
from gpubench.records.strict_json import strict_dumps
from gpubench.report.format import rate as rate_text


def show_peaks(device: str, force: bool, as_json: bool, console: Console) -> int:
    machine = detect_machine(device)
    env = device_env(machine.device)
    if not as_json:
        console.print(f"{'Measuring' if force else 'Loading or measuring'} the ceilings of "
                      f"{env.get('gpu') or 'this CPU'} ...")
    ceilings = load_or_measure(env, force=force)
    if as_json:
        print(strict_dumps(ceilings.to_dict()))
        return errors.EXIT_OK
    table = Table(title=f"Measured ceilings: {ceilings.device}", title_justify="left",
                  caption=f"{ceilings.method}; measured {ceilings.measured}; cached in "
                          f"{cache_dir() / (ceilings.key + '.json')}", caption_justify="left")
    for header in ("dtype", "matmul TFLOP/s", "copy GB/s", "ridge FLOP/byte"):
        table.add_column(header, justify="right" if header != "dtype" else "left")
    for dtype, rate in ceilings.tflops.items():
        ridge = rate * 1e12 / (ceilings.bandwidth_gbps * 1e9)
        table.add_row(dtype, rate_text(rate), rate_text(ceilings.bandwidth_gbps), rate_text(ridge))
    console.print(table)
    return errors.EXIT_OK

"""What `gpubench trace` prints after writing a trace: where it is, and what ran. Pure."""

from __future__ import annotations

import re

from rich.table import Table

from gpubench import format as fmt
from gpubench.timing.chrome_trace import VariantTrace

OPEN_HINT = ("open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load); "
             "gpubench's regions are the gpubench/... and gpubench::call/flush spans")


def short_kernel_name(name: str, width: int = 48) -> str:
    """'void at::native::vectorized_elementwise_kernel<4, ...>(...)' -> the name before '<'/'('."""
    base = re.sub(r"^void\s+", "", name)
    base = re.split(r"[<(]", base, maxsplit=1)[0].strip() or name
    return base if len(base) <= width else base[: width - 1] + "…"


def trace_table(traces: list[VariantTrace], has_device: bool) -> Table:
    """One row per traced variant: its top kernels by device time, launches per call, device
    and host time per call, and the gap between a launch call and its kernel's start."""
    title = "top kernels by device time, per variant" if has_device else \
        "host time per call (CPU run: no device kernels)"
    table = Table(title=title, title_justify="left")
    for header in ("variant", "top kernels (us/call)", "launches/call", "device/call",
                   "host/call", "launch→start"):
        table.add_column(header, overflow="fold")
    for trace in traces:
        kernels = "\n".join(f"{short_kernel_name(name)} {us:.3g}" + (f" ×{n:g}" if n != 1 else "")
                            for name, us, n in trace.top_kernels()) or "-"
        gap = trace.launch_gap_us
        table.add_row(trace.label, kernels, f"{trace.launches_per_call:g}",
                      fmt.duration(trace.device_us_per_call / 1e6) if has_device else "-",
                      fmt.duration(trace.host_us_per_call / 1e6),
                      fmt.duration(gap / 1e6) if gap is not None else "-")
    return table


def counts_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{value} {key}" for key, value in counts.items())

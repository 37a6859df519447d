"""How `--explain` shows why a point moved (records/kernel_change.py): per point, one table
of counters, BASE and NEW side by side with their change and their share of the duration
change, ranked by that share; then ncu's hints that came and went. Pure: builds, never
prints."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpubench import format as F
from gpubench import safe_text
from gpubench.records.kernel_change import CounterChange, KernelChange

HEADERS = ("counter", "base", "new", "change", "share of the time change")
# Rows shown per point: the identity's factors with their causes and stall reasons, then
# the context counters; the record keeps every row.
SHOWN_ROWS = 14


def explain_view(changes: Sequence[KernelChange]) -> Group:
    """One table per explained point (or its error), in the order given."""
    parts: list = []
    for change in changes:
        title = safe_text.terminal(f"why {change.variant} {change.shape} {change.dtype} "
                                   f"moved: {change.kernel or 'no kernel'}")
        if change.error:
            parts.append(Text(f"{title}: not explained ({safe_text.terminal(change.error)})"))
            continue
        parts.append(_table(change, title))
        parts += [Text(line) for line in hint_lines(change)]
    return Group(*parts)


def _table(change: KernelChange, title: str) -> Table:
    caption = (f"ncu duration {_ns(change.base_ns)} -> {_ns(change.new_ns)} "
               f"({_signed_ns(change.delta_ns)}); the shares add up to it: first what "
               f"moved it, then what offset it, then context")
    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, title_justify="left",
                  caption_justify="left", pad_edge=False)
    for header in HEADERS:
        table.add_column(header, justify="left" if header == "counter" else "right")
    toward = True
    for row in change.counters[:SHOWN_ROWS]:
        offsets = _offsets(row, change.delta_ns)
        if toward and offsets:  # the factors that pulled the other way, after a rule
            table.add_section()
            toward = False
        table.add_row(*counter_cells(row))
    return table


def _offsets(row: CounterChange, delta_ns: float) -> bool:
    """A factor (not a cause or a part) whose share is against the change, or none."""
    if row.via or row.within:
        return False
    return row.share_ns is None or math.isnan(row.share_ns) or \
        (row.share_ns > 0) != (delta_ns > 0)


def counter_cells(row: CounterChange) -> list[str]:
    """A counter's cells by HEADERS; a cause or a part is indented under its factor, and a
    cause's share (its factor's, not one of its own) is marked so."""
    name = safe_text.terminal(f"  {row.name}" if row.via or row.within else row.name)
    if row.share_ns is None or math.isnan(row.share_ns):
        share = "-"
    else:
        share = _signed_ns(row.share_ns) + (" (its cause)" if row.via else "")
    return [name, _value(row.base, row.unit), _value(row.new, row.unit),
            "-" if row.change is None else f"{row.change:+.1%}", share]


def hint_lines(change: KernelChange) -> list[str]:
    lines = []
    if change.hints_appeared:
        lines.append("ncu hints new in NEW: " + safe_text.terminal(
            "; ".join(change.hints_appeared)))
    if change.hints_gone:
        lines.append("ncu hints gone from NEW: " + safe_text.terminal(
            "; ".join(change.hints_gone)))
    return lines


def _value(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "Hz":
        return f"{value / 1e9:.3f} GHz"
    if unit == "regs":
        return f"{value:.0f}"
    if abs(value) >= 1e4:  # counts and bytes: 8.913 M inst, 115.7 MB
        scale, prefix = next((s, p) for s, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"),
                                                  (1e3, "k")) if abs(value) >= s)
        suffix = f" {prefix}{unit}" if unit == "B" else f" {prefix}"
        return F.significant(value / scale, 4) + suffix
    return F.significant(value, 4) + (" B" if unit == "B" else "")


def _ns(value: float) -> str:
    return "-" if math.isnan(value) else F.duration(value * 1e-9)


def _signed_ns(value: float) -> str:
    return ("+" if value >= 0 else "-") + F.duration(abs(value) * 1e-9)

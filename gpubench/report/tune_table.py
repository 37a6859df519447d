"""`gpubench tune`'s table: every config, its time with the CI, how it fared, its resources."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.tune.summary import TuneRow

MARK_STYLE = {"best": "bold green", "tied": "green", "dropped": "dim", "failed": "bold red"}


def tune_table(rows: list[TuneRow], title: str, caption: str) -> Table:
    table = Table(title=safe_text.terminal(title), caption=safe_text.terminal(caption),
                  caption_justify="left")
    for header, justify in (("#", "right"), ("config", "left"), ("check", "left"),
                            ("median", "right"), ("±CI", "right"), ("vs fastest", "right"),
                            ("n", "right"), ("rounds", "right"), ("regs", "right"),
                            ("smem", "right"), ("occupancy", "right"), ("", "left"),
                            ("note", "left")):
        table.add_column(header, justify=justify)
    for row in rows:
        table.add_row(*cells(row))
    return table


def cells(row: TuneRow) -> list:
    style = "green" if row.status == "PASS" else "dim" if row.status == "NOT RUN" else "bold red"
    return [str(row.index), safe_text.terminal(row.label), Text(row.status, style=style),
            fmt.duration(row.median_s) if row.median_s is not None else "-",
            _ci(row), f"{row.ratio:.3f}x" if row.ratio is not None else "-",
            str(row.samples) if row.samples else "-", str(row.rounds) if row.rounds else "-",
            _count(row.registers), _bytes(row.shared_bytes),
            fmt.percent(row.occupancy, 0) if row.occupancy is not None else "-",
            Text(row.mark, style=MARK_STYLE.get(row.mark, "")),
            safe_text.terminal(row.note)]


def markdown(rows: list[TuneRow]) -> str:
    """The same table as GitHub markdown (for pasting into an issue). A config's label is
    the spec's values ('MODE=a|b'): each cell goes through safe_text.markdown, so a '|',
    a newline or a '<!--' in it cannot split the row or hide the rest of the comment."""
    head = "| # | config | check | median | ±CI | vs fastest | n | regs | smem | occ | |"
    lines = [head, "|" + "---|" * 11]
    for row in rows:
        c = [safe_text.markdown(plain(x)) for x in cells(row)]
        lines.append("| " + " | ".join(c[:7] + c[8:12]) + " |")
    return "\n".join(lines) + "\n"


def plain(cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _ci(row: TuneRow) -> str:
    """Half the 95% CI's width as % of the median, as `run`'s table shows it."""
    if row.ci_low_s is None or row.ci_high_s is None or not row.median_s:
        return "-"
    return fmt.percent((row.ci_high_s - row.ci_low_s) / 2 / row.median_s)


def _count(value) -> str:
    return "-" if value is None else str(value)


def _bytes(value) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:.0f} KiB" if value >= 1024 else f"{value} B"

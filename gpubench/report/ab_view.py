"""How an A/B run's verdicts are shown: one table (terminal), the same as markdown (a pull
request), a summary line. Pure: builds, never prints."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from gpubench import format as F
from gpubench import safe_text
from gpubench.records.ab import PairVerdict
from gpubench.report.compare_view import STYLE

HEADERS = ("variant", "shape", "dtype", "mode", "base", "new", "change", "99% CI", "blocks",
           "verdict", "why")
STYLES = {**STYLE, "FAILED": "bold red", "SUSPECT": "bold red"}


def cells(v: PairVerdict) -> list[str]:
    """One verdict's row, by HEADERS; a control is marked '(control)'."""
    ci = "-" if math.isnan(v.low) else f"{v.low - 1:+.2%} .. {v.high - 1:+.2%}"
    change = "-" if math.isnan(v.ratio) else f"{v.change:+.2%}"
    name = f"{v.variant} (control)" if v.control else v.variant
    return [name, v.shape, v.dtype, v.mode, _time(v.base_median_s), _time(v.new_median_s),
            change, ci, str(v.blocks or "-"), v.verdict, v.reason]


def ab_table(verdicts: Sequence[PairVerdict], title: str, threshold: float) -> Table:
    table = Table(title=safe_text.terminal(title), box=box.SIMPLE_HEAD, title_justify="left",
                  caption=summary_line(verdicts, threshold), caption_justify="left")
    for header in HEADERS:
        numeric = header in ("base", "new", "change", "blocks")
        table.add_column(header, justify="right" if numeric else "left",
                         overflow="fold")
    for v in verdicts:
        row = [safe_text.terminal(cell) for cell in cells(v)]
        row[9] = Text(row[9], style=STYLES.get(v.verdict, ""))
        table.add_row(*row)
    return table


def ab_markdown(verdicts: Sequence[PairVerdict], title: str) -> str:
    lines = [f"**{safe_text.markdown(title)}**", "", "| " + " | ".join(HEADERS) + " |",
             "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(safe_text.markdown(cell) for cell in cells(v)) + " |"
              for v in verdicts]
    return "\n".join(lines)


def summary_line(verdicts: Sequence[PairVerdict], threshold: float) -> str:
    """'ab: 2 SLOWER, 6 SAME (threshold +-0.5%; NEW/BASE paired in one process, 99% CI)'."""
    counts = Counter(v.verdict for v in verdicts)
    said = ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common()) or "no points"
    return (f"ab: {said} (threshold +-{threshold:.1%}; base and new timed in pairs in one "
            "process, interleaved in random order; CI: 99%, looked at after every round)")


def paired_line(v: PairVerdict, iteration: int) -> str:
    """`run --watch`'s line for a point paired with an earlier iteration: '  paired with #2:
    cuda n=2^20 float32 cold  SLOWER +1.23% [+0.80% .. +1.60%] (one process, 812 blocks)'."""
    row = cells(v)
    said = f"{v.verdict} {row[6]} [{row[7]}]" if v.blocks else v.verdict
    why = f" ({v.reason})" if v.reason else f" (one process, {v.blocks} blocks)"
    return safe_text.one_line(f"  paired with #{iteration}: {v.variant} {v.shape} {v.dtype} "
                              f"{v.mode}  {said}{why}")


def _time(seconds: float) -> str:
    return "-" if seconds is None or math.isnan(seconds) else F.duration(seconds)

"""How an A/B run's verdicts are shown: one table (terminal), the same as markdown (a pull
request), a summary line. Pure: builds, never prints."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpubench import format as F
from gpubench import safe_text
from gpubench.analysis.aa import Calibration, aa_summary, point_label
from gpubench.analysis.suite import ab_summary
from gpubench.records.ab import PairVerdict
from gpubench.report.compare_view import STYLE, suite_line
from gpubench.timing.paired import EXTENDED, MIN_BLOCKS, Z_SEQUENTIAL
from gpubench.timing.settings import TimingSettings

HEADERS = ("variant", "shape", "dtype", "mode", "base", "new", "change", "CI", "blocks",
           "verdict", "why")
STYLES = {**STYLE, "FAILED": "bold red", "SUSPECT": "bold red", "NOT RUN": "dim"}


def cells(v: PairVerdict) -> list[str]:
    """One verdict's row, by HEADERS; a control is marked '(control)'."""
    ci = "-" if math.isnan(v.low) else f"{v.low - 1:+.2%} .. {v.high - 1:+.2%}"
    change = "-" if math.isnan(v.ratio) else f"{v.change:+.2%}"
    name = f"{v.variant} (control)" if v.control else v.variant
    return [name, v.shape, v.dtype, v.mode, _time(v.base_median_s), _time(v.new_median_s),
            change, ci, str(v.blocks or "-"), v.verdict, v.reason]


def numbered_reasons(verdicts: Sequence[PairVerdict]) -> dict[str, int]:
    """Each distinct reason -> its note's number, in the order the rows first give it. A
    reason is a sentence or two (a host-load one names the processes), and one cause often
    holds for many rows: in the row, at 120 columns, it wrapped a word or two a line and
    said the same thing on every row; as a note it is said once, whole."""
    numbers: dict[str, int] = {}
    for v in verdicts:
        if v.reason and v.reason not in numbers:
            numbers[v.reason] = len(numbers) + 1
    return numbers


def ab_table(verdicts: Sequence[PairVerdict], title: str, threshold: float,
             own: Mapping[str, float] | None = None) -> Group:
    """The table, its why column a note's number, the notes under it, and the suite line
    (analysis/suite.py) last. `own`: --threshold-from-aa's thresholds, by point label."""
    numbers = numbered_reasons(verdicts)
    # Two spaces between columns, not three, and none at the edges: eleven columns of a
    # control's matmul row (its name the longest) then fit one line at 120 columns.
    table = Table(title=safe_text.terminal(title), box=box.SIMPLE_HEAD, title_justify="left",
                  caption=summary_line(verdicts, threshold, own), caption_justify="left",
                  collapse_padding=True, pad_edge=False)
    for header in HEADERS:
        numeric = header in ("base", "new", "change", "blocks")
        table.add_column(header, justify="right" if numeric else "left",
                         overflow="fold")
    for v in verdicts:
        row = [safe_text.terminal(cell) for cell in cells(v)]
        row[9] = Text(row[9], style=STYLES.get(v.verdict, ""))
        row[10] = f"[{numbers[v.reason]}]" if v.reason else ""
        table.add_row(*row)
    notes = Table.grid(padding=(0, 1))  # a note wraps under its own text, not its number
    notes.add_column(justify="right", no_wrap=True)
    notes.add_column(overflow="fold")
    for reason, number in numbers.items():
        notes.add_row(f"[{number}]", safe_text.terminal(reason))
    suite = Text(safe_text.terminal(suite_line(ab_summary(verdicts))))
    return Group(table, notes, suite) if numbers else Group(table, suite)


# Verdicts a pull request's reader must see without unfolding anything.
CHANGED = ("FASTER", "SLOWER", "FAILED", "SUSPECT")


def ab_markdown(verdicts: Sequence[PairVerdict], title: str, family: str = "") -> str:
    """A pull-request comment that a CI job can update in place: a marker line that stays
    the same from run to run (an HTML comment naming the family), the title, the suite
    line, the changed points (FASTER, SLOWER, FAILED, SUSPECT), then every point and the
    reasons (numbered, each once) folded in <details>."""
    numbers = numbered_reasons(verdicts)
    changed = [v for v in verdicts if v.verdict in CHANGED]
    lines = [marker_line(family), f"**{safe_text.markdown(title)}**", "",
             f"`{safe_text.markdown(suite_line(ab_summary(verdicts)))}`", ""]
    if changed:
        lines += [f"Changed ({len(changed)}):", "", *markdown_table(changed, numbers), ""]
    else:
        lines += ["No point changed beyond the threshold.", ""]
    lines += [f"<details><summary>All {len(verdicts)} points</summary>", "",
              *markdown_table(verdicts, numbers)]
    if numbers:
        lines.append("")
        lines += [f"{number}. {safe_text.markdown(reason)}" for reason, number in numbers.items()]
    lines += ["", "</details>"]
    return "\n".join(lines)


def marker_line(family: str) -> str:
    """'<!-- gpubench ab: square -->': what a CI job finds its earlier comment by. Only
    letters, digits and '._-' of the name are kept, and no two '-' together, so no name
    can end the comment."""
    name = "".join(c for c in family if c.isalnum() or c in "._-")
    while "--" in name:
        name = name.replace("--", "-")
    return f"<!-- gpubench ab{': ' + name if name else ''} -->"


def markdown_table(verdicts: Sequence[PairVerdict], numbers: dict[str, int]) -> list[str]:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for v in verdicts:
        row = [safe_text.markdown(cell) for cell in cells(v)]
        row[10] = f"[{numbers[v.reason]}]" if v.reason else ""
        lines.append("| " + " | ".join(row) + " |")
    return lines


def summary_line(verdicts: Sequence[PairVerdict], threshold: float,
                 own: Mapping[str, float] | None = None) -> str:
    """'ab: 2 SLOWER, 6 SAME (threshold +-0.5%; ...; CI: 99%, ...)'; with many points, the
    intervals' z and what it keeps (analysis/ab.judge_pairs)."""
    counts = Counter(v.verdict for v in verdicts)
    said = ", ".join(f"{n} {verdict}" for verdict, n in counts.most_common()) or "no points"
    return (f"ab: {said} ({threshold_text(verdicts, threshold, own)}; base and new timed "
            "in pairs in one "
            f"process, interleaved in random order; CI: {ci_level(verdicts)}, looked at "
            "after every round)")


def threshold_text(verdicts: Sequence[PairVerdict], threshold: float,
                   own: Mapping[str, float] | None) -> str:
    """'threshold +-0.5%', or with --threshold-from-aa 'threshold from the A/A at 12 of 14
    points (+-0.10% to +-0.31%), +-0.5% at the rest': what a verdict had to clear."""
    fixed = f"threshold +-{threshold:.1%}"
    mine = [own[label] for v in verdicts
            if (label := point_label(v.variant, v.shape, v.dtype, v.mode)) in (own or {})]
    if not mine:
        return fixed
    rest = "" if len(mine) == len(verdicts) else f", +-{threshold:.1%} at the rest"
    spread = f"+-{min(mine):.2%}" + ("" if min(mine) == max(mine) else f" to +-{max(mine):.2%}")
    return f"threshold from the A/A at {len(mine)} of {len(verdicts)} points ({spread}){rest}"


def ci_level(verdicts: Sequence[PairVerdict]) -> str:
    """'99%' for one point's intervals; for many decided together, their z and why."""
    z = max((v.z for v in verdicts), default=Z_SEQUENTIAL)
    if z <= Z_SEQUENTIAL * 1.0001:
        return "99%"
    return (f"each at z = {z:.2f}, so that any false FASTER/SLOWER among the "
            f"{len(verdicts)} points stays under 5% (Bonferroni)")


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


def aa_table(found: Sequence[Calibration], title: str) -> Group:
    """`ab --aa`: per point the change an A/B decides at 80% power, and any false verdict
    (an A/A point read FASTER or SLOWER), then the summary line."""
    table = Table(title=safe_text.terminal(title), box=box.SIMPLE_HEAD, title_justify="left",
                  collapse_padding=True, pad_edge=False)
    for header in ("variant", "shape", "dtype", "mode", "blocks", "detectable", "A/A verdict"):
        table.add_column(header, justify="right" if header in ("blocks", "detectable")
                         else "left")
    for c in found:
        size = "-" if math.isnan(c.detectable) else f"{c.detectable:.2%}"
        said = Text(f"{c.verdict} (false)" if c.false else c.verdict,
                    style="bold red" if c.false else "")
        table.add_row(*(safe_text.terminal(x) for x in (c.variant, c.shape, c.dtype, c.mode)),
                      str(c.blocks), size, said)
    return Group(table, Text(aa_summary(list(found))))


def budget_line(verdicts: Sequence[PairVerdict], timing: TimingSettings) -> str:
    """Where the time beyond --max-time went: 'time: up to 5.0 s a point beyond --max-time
    (--budget); 3 points took more to reach 30 blocks; 1 still short'."""
    extended = sum(v.stop == EXTENDED for v in verdicts)
    short = sum(0 < v.blocks < MIN_BLOCKS or (v.blocks == 0 and v.verdict == "UNSURE"
                                              and "blocks" in v.reason) for v in verdicts)
    return (f"time: up to {timing.blocks_time_s:.1f} s a point beyond --max-time (--budget "
            f"{timing.blocks_time_s * timing.decisions:.0f} s in all); {extended} point"
            f"{'s' * (extended != 1)} took more to reach {MIN_BLOCKS} blocks; {short} still "
            "short")


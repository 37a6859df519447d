"""How a run comparison is shown: a rich table, markdown for a PR comment, and the
one-cell form that `run --baseline` adds to its tables. Pure: builds, never prints."""

from __future__ import annotations

import math

from rich.table import Table
from rich.text import Text

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.analysis.comparison import FASTER, SAME, SLOWER, UNSURE, Comparison, RunComparison
from gpubench.analysis.status_change import BECAME_FAILED, BECAME_SUSPECT, STATUS_VERDICTS

STYLE = {FASTER: "green", SLOWER: "bold red", SAME: "", UNSURE: "yellow",
         BECAME_SUSPECT: "bold red", BECAME_FAILED: "bold red"}
HEADERS = ("point", "base", "new", "change", "95% CI", "verdict", "why")
RIGHT = {"base", "new", "change", "95% CI"}


def change_text(comparison: Comparison) -> str:
    """'+301%', '-3.5%', '+0.2%': NEW against BASE as a signed percentage."""
    return _signed_percent(comparison.ratio - 1)


def ci_text(comparison: Comparison) -> str:
    """The CI as changes: '-0.1%..+0.4%'; '-' when there was none."""
    if math.isnan(comparison.ci_low):
        return "-"
    return f"{_signed_percent(comparison.ci_low - 1)}..{_signed_percent(comparison.ci_high - 1)}"


def _signed_percent(fraction: float) -> str:
    digits = 0 if abs(fraction) >= 1 else 1
    return f"{fraction * 100:+.{digits}f}%"


def verdict_cell(comparison: Comparison | None) -> Text:
    """'+0.2% SAME' for the run table's baseline column; '*' marks other machines."""
    if comparison is None:
        return Text("-")
    mark = "*" if comparison.marked else ""
    return Text(f"{change_text(comparison)} {comparison.verdict}{mark}",
                style=STYLE.get(comparison.verdict, ""))


def compare_cells(point) -> list[str]:
    c = point.comparison
    if c is None:  # no trusted time on one side: the verdict is SUSPECT, FAILED or '-'
        return [point.key.label(), "-", "-", "-", "-", point.verdict, point.note]
    mark = "*" if c.marked else ""
    return [point.key.label(), fmt.duration(c.base_median_s), fmt.duration(c.new_median_s),
            change_text(c), ci_text(c), c.verdict + mark, c.reason]


def compare_table(result: RunComparison, base_name: str, new_name: str) -> Table:
    # Text, never markup; control characters escaped: names and reasons are the user's
    title = safe_text.one_line(f"compare  BASE {base_name}  NEW {new_name}")
    table = Table(title=Text(title, style="table.title"), title_justify="left",
                  caption=Text(safe_text.terminal(caption(result), limit=None),
                               style="table.caption"),
                  caption_justify="left")
    for header in HEADERS:
        table.add_column(header, justify="right" if header in RIGHT else "left",
                         overflow="fold", no_wrap=header in RIGHT or header == "verdict")
    for point in result.points:
        cells = [Text(safe_text.terminal(cell)) for cell in compare_cells(point)]
        verdict = cells[5].plain
        cells[5].stylize(STYLE.get(verdict.rstrip("*"), ""))
        table.add_row(*cells)
    return table


def compare_markdown(result: RunComparison, base_name: str, new_name: str) -> str:
    lines = [f"**gpubench compare** BASE `{safe_text.markdown(base_name)}` NEW "
             f"`{safe_text.markdown(new_name)}`", "",
             "| " + " | ".join(HEADERS) + " |",
             "|" + "|".join("---:" if h in RIGHT else "---" for h in HEADERS) + "|"]
    for point in result.points:
        cells = [safe_text.markdown(cell) for cell in compare_cells(point)]
        if cells[5].rstrip("*") in (FASTER, SLOWER, *STATUS_VERDICTS):
            cells[5] = f"**{cells[5]}**"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", safe_text.markdown(caption(result), limit=None)]
    return "\n".join(lines) + "\n"


def summary_line(result: RunComparison) -> str:
    """'18 points: 1 SUSPECT, 1 SLOWER, 11 SAME, 5 UNSURE' — what a CI log needs first;
    '; 3 of BASE missing in NEW' when NEW did not measure some of BASE's points."""
    counts = result.counts()
    order = [v for v in (*STATUS_VERDICTS, SLOWER, FASTER, SAME, UNSURE, "-") if counts.get(v)]
    parts = [f"{counts[v]} {'not compared' if v == '-' else v}" for v in order]
    missing = (f"; {len(result.missing_in_new)} of BASE missing in NEW"
               if result.missing_in_new else "")
    return f"{len(result.points)} points: {', '.join(parts) or 'none in common'}{missing}"


def caption(result: RunComparison, list_unmatched: bool = True) -> str:
    """What the comparison table means; `list_unmatched`: also name every point of one
    run only (the HTML page folds those lists away instead)."""
    parts = [summary_line(result),
             f"change: NEW median vs BASE median; 95% CI by bootstrap over both runs' raw "
             f"samples. FASTER/SLOWER: the whole CI beyond +-{result.threshold:.0%} and beyond "
             "what this point varies between runs of unchanged code (its samples' spread, "
             "its group's common shift, its clocks); SAME: the whole CI within "
             f"+-{result.threshold:.0%}"]
    if any(p.status_verdict for p in result.points):
        parts.append("SUSPECT / FAILED: PASS in BASE, but SUSPECT (right output, a time not "
                     "to be trusted) or failed in NEW: a regression, its reason under why; a "
                     "point SUSPECT in BASE is not compared for speed")
    if result.env_differences:
        parts.append("* the runs differ in " + "; ".join(result.env_differences) +
                     ": verdicts compare machines or software, not only code")
    if result.only_base and list_unmatched:
        parts.append(f"only in BASE: {', '.join(result.only_base)}")
    if result.only_new and list_unmatched:
        parts.append(f"only in NEW: {', '.join(result.only_new)}")
    return ". ".join(parts) + "."

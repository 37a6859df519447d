"""How a run comparison is shown: a table per family and dtype for the terminal (rows
and columns chosen by compare_groups.py), the same grouping as markdown for a PR comment,
the summary line a CI log greps, and the one-cell form that `run --baseline` adds to its
tables. Pure: builds, never prints."""

from __future__ import annotations

import math

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpubench import safe_text
from gpubench.analysis.comparison import (
    FASTER,
    SAME,
    SLOWER,
    UNSURE,
    VERDICTS,
    Comparison,
    RunComparison,
)
from gpubench.analysis.status_change import BECAME_FAILED, BECAME_SUSPECT, STATUS_VERDICTS
from gpubench.analysis.suite import SuiteSummary, compare_summary
from gpubench.report.compare_groups import (
    NUMERIC,
    CompareGroup,
    change_text,
    ci_text,
    compare_groups,
    point_cells,
    ratio_with_ci,
)
from gpubench.timing.ratio_ci import FAMILY_ERROR, family_level

__all__ = ["HEADERS", "change_text", "ci_text", "compare_cells", "compare_markdown",
           "compare_table", "counts_text", "level_text", "ratio_with_ci", "suite_line",
           "summary_line", "verdict_cell"]

STYLE = {FASTER: "green", SLOWER: "bold red", SAME: "", UNSURE: "yellow",
         BECAME_SUSPECT: "bold red", BECAME_FAILED: "bold red"}
# Column headers as shown, by compare_groups.py's cell names: a compare's intervals are
# at the level its points are decided at together (family_level), which the caption says
# once, so the header names no level.
SHOWN = {"95% CI": "CI"}
# The flat form, one row per point with its full label (the HTML report's table).
HEADERS = ("point", "base", "new", "change", "CI", "verdict", "why")
# The terminal leaves the CI of the change out: `speed` carries the same interval (as a
# ratio with its ±), and 11 characters more would wrap every reason at 80 columns.
TERMINAL_HIDDEN = frozenset({"95% CI"})


def verdict_cell(comparison: Comparison | None) -> Text:
    """'+0.2% SAME' for the run table's baseline column; '*' marks other machines."""
    if comparison is None:
        return Text("-")
    mark = "*" if comparison.marked else ""
    return Text(f"{change_text(comparison)} {comparison.verdict}{mark}",
                style=STYLE.get(comparison.verdict, ""))


def compare_cells(point) -> list[str]:
    """The flat row of one point, by HEADERS (the verdict at index 5)."""
    cells = {SHOWN.get(name, name): text for name, text in point_cells(point).items()}
    return [point.key.label(), *(cells[h] for h in HEADERS[1:])]


# ---------------------------------------------------------------- terminal


def compare_table(result: RunComparison, base_name: str, new_name: str,
                  width: int | None = None) -> Group:
    """The names of both runs, a table per family and dtype, the legend, the suite line
    and, last, the summary line (what a CI log greps for). With the terminal's `width`, a
    reason too long for the room its table leaves is a numbered note under the table, not
    a column a few letters wide that folds it line by line."""
    names = Text(safe_text.one_line(f"BASE {base_name}") + "\n" +
                 safe_text.one_line(f"NEW  {new_name}"), style="table.title")
    blocks = [block for group in compare_groups(result)
              for block in (Text(""), *_group_blocks(group, width))]
    legend = Text(safe_text.terminal(caption(result), limit=None), style="table.caption")
    return Group(names, *blocks, Text(""), legend,
                 Text(safe_text.terminal(suite_line(compare_summary(result)))),
                 Text(safe_text.terminal(summary_line(result))))


def _group_blocks(group: CompareGroup, width: int | None) -> list:
    """The group's table, then its notes (the reasons moved out of the table)."""
    columns = [c for c in group.columns() if c not in TERMINAL_HIDDEN]
    rows = [{c: safe_text.terminal(row[c]) for c in columns} for row in group.rows()]
    notes = _reasons_as_notes(rows, columns, width) if width and "why" in columns else []
    table = _group_table(group, columns, rows)
    return [table, *(Text(note, style="table.caption") for note in notes)]


# The narrowest reason column worth keeping: 'noise ±12.5%', 'near the ±1%'.
WHY_MIN = 16
# Columns of a terminal table are set apart by two spaces (the box's and its padding).
COLUMN_GAP = 2


def _reasons_as_notes(rows: list[dict], columns: list[str], width: int) -> list[str]:
    """Move each reason longer than the room the other columns leave (at least WHY_MIN)
    to a note '[n] reason', the cell keeping '[n]'; the same reason is one note."""
    others = sum(max(len(c), *(len(r[c]) for r in rows)) + COLUMN_GAP
                 for c in columns if c != "why") if rows else 0
    room = max(width - others, WHY_MIN)
    numbered: dict[str, int] = {}
    for row in rows:
        reason = row["why"]
        if len(reason) > room:
            row["why"] = f"[{numbered.setdefault(reason, len(numbered) + 1)}]"
    return [f"  [{n}] {reason}" for reason, n in numbered.items()]


def _group_table(group: CompareGroup, columns: list[str], rows: list[dict]) -> Table:
    table = Table(title=Text(safe_text.one_line(group.heading()), style="bold"),
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  padding=(0, 1, 0, 0))  # with the box's blank separator: 2 spaces a column
    for column in columns:
        wraps = column == "why"  # only the reason wraps; every figure stays on its line
        table.add_column(column, justify="right" if _right(column, group) else "left",
                         no_wrap=not wraps, overflow="fold")
    for row in rows:
        cells = [Text(row[c]) for c in columns]
        if "verdict" in columns:
            verdict = cells[columns.index("verdict")]
            verdict.stylize(STYLE.get(verdict.plain.rstrip("*"), ""))
        table.add_row(*cells)
    return table


def _right(column: str, group: CompareGroup) -> bool:
    return column in NUMERIC or column in group.axes


# ---------------------------------------------------------------- markdown


def compare_markdown(result: RunComparison, base_name: str, new_name: str) -> str:
    """The suite line first (what a PR's reader wants before 40 rows), then the terminal's
    grouping as markdown: a bold heading and a table per family and dtype (the CI of the
    change included: a PR comment is not short of columns), then the legend and the
    summary line."""
    lines = [f"**gpubench compare** BASE `{safe_text.markdown(base_name)}` NEW "
             f"`{safe_text.markdown(new_name)}`", "",
             f"`{safe_text.markdown(suite_line(compare_summary(result)))}`", ""]
    for group in compare_groups(result):
        columns = group.columns()
        lines += [f"**{safe_text.markdown(group.heading())}**", "",
                  "| " + " | ".join(SHOWN.get(c, c) for c in columns) + " |",
                  "|" + "|".join("---:" if _right(c, group) else "---" for c in columns) + "|"]
        for row in group.rows():
            cells = {c: safe_text.markdown(row[c]) for c in columns}
            if row["verdict"].rstrip("*") in (FASTER, SLOWER, *STATUS_VERDICTS):
                cells["verdict"] = f"**{cells['verdict']}**"
            lines.append("| " + " | ".join(cells[c] for c in columns) + " |")
        lines.append("")
    lines += [safe_text.markdown(caption(result), limit=None), "",
              f"`{safe_text.markdown(summary_line(result))}`"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- words


def counts_text(result: RunComparison) -> str:
    """'6 points: 0 FASTER, 2 SLOWER, 2 SAME, 2 UNSURE': the four speed verdicts always,
    in this order (a log's grep never misses a 0), then SUSPECT, FAILED and 'not
    compared' where there are any."""
    counts = result.counts()
    extra = [v for v in (*STATUS_VERDICTS, "-") if counts.get(v)]
    parts = [f"{counts.get(v, 0)} {v}" for v in VERDICTS]
    parts += [f"{counts[v]} {'not compared' if v == '-' else v}" for v in extra]
    points = len(result.points)
    return f"{points} point{'' if points == 1 else 's'}: {', '.join(parts)}"


def summary_line(result: RunComparison) -> str:
    """The line a CI log greps, always in this form:

        compare: 12 points: 2 FASTER, 1 SLOWER, 8 SAME, 1 UNSURE; regression: yes

    counts_text, then '; 3 of BASE missing in NEW' when NEW did not measure some of
    BASE's points, then 'regression: yes' exactly when --fail-on-regression fails
    (RunComparison.fails_gate: a point SLOWER, SUSPECT or FAILED in NEW, BASE points missing
    in NEW, or no point compared for speed), else 'no'."""
    missing = (f"; {len(result.missing_in_new)} of BASE missing in NEW"
               if result.missing_in_new else "")
    regressed = "yes" if result.fails_gate() else "no"
    return f"compare: {counts_text(result)}{missing}; regression: {regressed}"


def suite_line(summary: SuiteSummary) -> str:
    """One line for a whole table (analysis/suite.py), `ab`'s and `compare`'s alike:

        suite: -0.40% [-0.90%, +0.10%] geometric mean over 38 decided points (95% CI);
        2 FASTER, 1 SLOWER, 35 SAME, 4 UNSURE

    (one line). Without a decided point: 'suite: no decided point; 0 FASTER, ...'."""
    counts = ", ".join(f"{n} {'not compared' if v == '-' else v}"
                       for v, n in summary.counts.items())
    if not summary.decided:
        return f"suite: no decided point; {counts}"
    points = f"{summary.decided} decided point{'' if summary.decided == 1 else 's'}"
    if not summary.with_ci:
        return f"suite: {_percent(summary.change)} geometric mean over {points} (none has " \
               f"a CI); {counts}"
    ci = f"[{_percent(summary.low - 1)}, {_percent(summary.high - 1)}]"
    level = "95% CI" if summary.with_ci == summary.decided else \
        f"95% CI over the {summary.with_ci} with one"
    return f"suite: {_percent(summary.change)} {ci} geometric mean over {points} ({level}); " \
           f"{counts}"


def level_text(result: RunComparison) -> str:
    """'CIs at 99.75% each: 5% family-wise over 20 points (Bonferroni: ...)': the level
    every point's interval was made at, and why (timing/ratio_ci.family_level). A record
    from before the family level holds 95% intervals, each point decided on its own."""
    points = len(result.compared())
    shown = level_percent(result.level)
    if points <= 1:
        return f"CI at {shown}"
    if not math.isclose(result.level, family_level(points)):  # a record from before, or
        return f"CIs at {shown} each"  # a part of a larger family (compare_runs' level)
    return (f"CIs at {shown} each: {FAMILY_ERROR:.0%} family-wise over {points} points "
            f"(Bonferroni: unchanged code gets a false FASTER or SLOWER in at most 1 compare "
            f"of {round(1 / FAMILY_ERROR)}, not 1 point of {round(1 / FAMILY_ERROR)})")


def level_percent(level: float) -> str:
    """'95%', '99.75%', '99.975%', '99.17%': enough digits for two of the error's."""
    error = (1 - level) * 100
    digits = max(0, 1 - math.floor(math.log10(error))) if error > 0 else 0
    return f"{level * 100:.{digits}f}".rstrip("0").rstrip(".") + "%"


def _percent(fraction: float) -> str:
    """'+0.42%', '-1.3%', '+324%': two decimals below 1% (an ab suite is gated at 0.5%), one
    up to 100%, whole percents beyond, where a tenth says nothing."""
    if abs(fraction) >= 1:
        return f"{fraction:+.0%}"
    return f"{fraction:+.2%}" if abs(fraction) < 0.01 else f"{fraction:+.1%}"


def caption(result: RunComparison, list_unmatched: bool = True) -> str:
    """What the comparison means; `list_unmatched`: also name every point of one run only
    (the HTML page folds those lists away instead)."""
    t = f"±{result.threshold:.0%}"
    repeated = sorted({p.comparison.runs for p in result.points
                       if p.comparison and p.comparison.runs != (1, 1)})
    interval = ("Student's t over the runs' medians where a point is in three runs or more, "
                "else the bootstrap of both runs' samples" if repeated
                else "bootstrap of both runs' samples")
    parts = [f"change: NEW vs BASE median; speed: BASE/NEW (above 1: NEW is faster) ± its "
             f"CI ({interval}). FASTER/SLOWER: the whole CI beyond "
             f"{t} and beyond what the point varies between runs of unchanged code (its "
             f"noise, its group's shift, its clocks); SAME: the whole CI within {t}. why: the "
             f"bound an UNSURE change is within (noise: the samples' IQR / median; host "
             f"clock: the CPU or wall-mode timer's drift between runs)", level_text(result)]
    if repeated:
        runs = ", ".join(f"{b} BASE and {n} NEW" for b, n in repeated)
        parts.append(f"Runs: {runs}; the t interval holds how far a fresh process moves a "
                     f"point, and the medians are the runs' geometric means")
    else:
        parts.append("One run a side: a short kernel moves a few percent from one process "
                     "to the next, which one run cannot show (--base-repeat, --new-repeat)")
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

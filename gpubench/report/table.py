"""The results table of one (family, dtype, size) group, as a rich Table. Pure: no printing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.records import result as R
from gpubench.records.features import EXTRAS
from gpubench.records.features.error_site import ERROR_SITE
from gpubench.records.features.vs_baseline import VS_BASELINE
from gpubench.report.compare_view import ratio_with_ci, verdict_cell
from gpubench.report.legend import BASELINE_HEADER, INTERPRETED, Legend, marking
from gpubench.timing import precision

# Where a column the width left out can still be read.
ELSEWHERE = "results.csv"
# Each status's label (records/result.py names it once) and its style.
STATUS_STYLE = {status: (R.status_label(status),
                         "green" if status == R.OK else "dim" if status in (R.SKIPPED, R.NOT_RUN)
                         else "bold red")
                for status in R.STATUS_LABELS}
# Every core column in order; "mode", "kernels" and "vs --baseline" show only when they
# say something (several modes, a multi-op call, --baseline); the extras' columns (records/
# features/: "vs ncu") go where their spec says, shown when a row of the group has them.
CORE_COLUMNS = (("variant", "left"), ("kind", "left"), ("mode", "left"), ("check", "left"),
                ("median", "right"), ("kernels", "right"), ("±CI", "right"), ("IQR", "right"),
                ("n", "right"), ("TFLOP/s", "right"), ("GB/s", "right"), ("of roof", "right"),
                ("vs base", "right"), (BASELINE_HEADER, "right"), ("build", "right"))
TABLE_EXTRAS = tuple(spec for spec in EXTRAS if spec.table is not None)


def _with_extras(order: tuple[str, ...], place) -> tuple[str, ...]:
    """`order` with each table extra's header inserted after the one `place(spec)` names."""
    result = list(order)
    for spec in TABLE_EXTRAS:
        result.insert(result.index(place(spec.table)) + 1, spec.table.header)
    return tuple(result)


JUSTIFY = {**dict(CORE_COLUMNS), **{spec.table.header: "right" for spec in TABLE_EXTRAS}}
COLUMNS = tuple((h, JUSTIFY[h])
                for h in _with_extras(tuple(h for h, _ in CORE_COLUMNS), lambda t: t.after))


def group_title(group: list[R.Result], device: str = "") -> str:
    """'matmul  M=16 N=4096 K=4096  bfloat16 on NVIDIA H200'."""
    first = group[0]
    where = f" on {device}" if device else ""
    return f"{safe_text.one_line(first.family)}  {first.shape.label()}  {first.dtype}{where}"


def group_table(group: list[R.Result], device: str = "", width: int | None = None) -> Table:
    """One row per variant and mode: check, median with its CI, spread, rates, roofline,
    speedup, build. The mode column appears when more than one mode was timed; the
    `vs --baseline` column when the baseline pass compared the rows with another run.
    Given the terminal's `width`, columns are dropped by DROP_ORDER until the rest fit
    whole (no cell is cut), and the caption names what was dropped."""
    headers, rows, caption = table_layout(group)
    return FittedTable(group_title(group, device), headers, rows, JUSTIFY, drop_order(group),
                       caption=caption, elsewhere=ELSEWHERE).table(width)


def groups_of(results: Iterable[R.Result]) -> list[list[R.Result]]:
    """Results by table: one per (family, dtype, shape), in run order."""
    groups: dict[tuple, list[R.Result]] = {}
    for result in results:
        groups.setdefault((result.family, result.dtype, result.shape.text()), []).append(result)
    return list(groups.values())


def group_markdown(group: list[R.Result], device: str = "") -> str:
    """The same table as GitHub-flavoured markdown, for a PR comment: every column, the
    caption below it, then why each failed or SUSPECT row is so (a reviewer reading
    "SUSPECT" must see the reason without the run folder)."""
    headers, rows, caption = table_layout(group)
    lines = [f"**{safe_text.markdown(group_title(group, device))}**", "",
             "| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if JUSTIFY[h] == "right" else "---" for h in headers) + "|"]
    for cells in rows:
        lines.append("| " + " | ".join(safe_text.markdown(plain(cells[h]))
                                       for h in headers) + " |")
    reasons = [f"- {safe_text.markdown(line, where='results.json')}"
               for line in status_notes(group)]
    return "\n".join([*lines, "", caption.strip(), *(["", *reasons] if reasons else [])]) + "\n"


def status_notes(group: list[R.Result]) -> list[str]:
    """'wrong: FAIL: 12 of 4096 elements ...', 'cached: SUSPECT: 0.0 ns ...': each failed
    or SUSPECT row's reason, once per (variant, status, reason)."""
    lines = []
    for r in group:
        if r.status not in R.FAILED_STATUSES and r.status != R.SUSPECT:
            continue
        line = f"{r.variant}: {STATUS_STYLE[r.status][0]}: {note(r) or '-'}"
        if line not in lines:
            lines.append(line)
    return lines


def table_layout(group: list[R.Result], baseline_column: bool = True
                 ) -> tuple[list[str], list[dict], str]:
    """(headers shown, one dict of cells per row, caption) of a group's table alone; a
    run's tables share one legend instead (report/run_tables.py)."""
    headers, rows = table_rows(group, baseline_column)
    return headers, rows, Legend.of(group, headers).text()


def table_rows(group: list[R.Result], baseline_column: bool = True
               ) -> tuple[list[str], list[dict]]:
    """(headers this group would show, one dict of cells per row, every column's cell in
    it). The `vs --baseline` column shows the verdicts the baseline pass set (analysis/
    baseline_pass.py) on the rows, when they carry them and `baseline_column` allows."""
    compared = baseline_column and any(VS_BASELINE.name in r.extras for r in group)
    shown = {"mode": len({r.mode for r in group}) > 1,
             "kernels": any(_multi(r) for r in group), BASELINE_HEADER: compared,
             **{spec.table.header: any(r.extra(spec.name) for r in group)
                for spec in TABLE_EXTRAS}}
    headers = [h for h, _ in COLUMNS if shown.get(h, True)]
    # A correctness-only baseline (the Triton interpreter's) makes every ratio to it moot.
    moot = any(r.baseline and R.correctness_only(r) for r in group)
    rows = []
    for result in group:
        cells = _cells(result)
        cells.update((spec.table.header, spec.table.cell(result.extra(spec.name)))
                     for spec in TABLE_EXTRAS)
        cells[BASELINE_HEADER] = verdict_cell(result.extra(VS_BASELINE.name)
                                              if compared else None)
        if moot:
            cells["vs base"] = "-"
        rows.append(cells)
    return headers, rows


# Which columns go first when the terminal is narrow: what results.csv has anyway and a
# reader needs least to compare variants. Never dropped: variant, mode, check, median, vs base.
# The rate that does not set the roof goes before the one that does ("RATE" stands for it).
DROP_ORDER = _with_extras(("kind", "IQR", "n", "build", "kernels", "RATE", "±CI",
                          BASELINE_HEADER, "RATE", "of roof"), lambda t: t.drop_after)


def drop_order(group: list[R.Result]) -> tuple[str, ...]:
    """DROP_ORDER with its rates filled in: a compute-bound group keeps TFLOP/s longest, a
    memory-bound one GB/s."""
    bounds = [r.roof.bound for r in group if r.roof]
    compute = bounds.count("compute") > len(bounds) / 2
    rates = iter(("GB/s", "TFLOP/s") if compute else ("TFLOP/s", "GB/s"))
    return tuple(next(rates) if h == "RATE" else h for h in DROP_ORDER)
# rich's default box draws "│ cell " per column and a closing "│": 3 characters a column, +1.
COLUMN_OVERHEAD, TABLE_OVERHEAD = 3, 1


def fit_columns(headers: list[str], rows: list[dict], width: int, order: tuple[str, ...],
                wrap: Mapping[str, int] | None = None) -> tuple[list[str], list[str]]:
    """(headers kept, headers dropped, in `order`) so that every kept cell prints whole
    within `width`. A column named in `wrap` may wrap at spaces: it needs only its longest
    word, and at least `wrap[header]` characters (the narrowest it still reads well at)."""
    wrap = wrap or {}
    kept = list(headers)
    dropped = []
    for header in order:
        if sum(_least_width(h, rows, wrap) for h in kept) + TABLE_OVERHEAD <= width:
            break
        if header in kept:
            kept.remove(header)
            dropped.append(header)
    return kept, dropped


def wrap_widths(headers: list[str], rows: list[dict], width: int,
                wrap: Mapping[str, int]) -> dict[str, int]:
    """The text widths of the wrapping columns among `headers` in a table `width` wide: first
    their narrowest widths (`wrap`), then their longest words, then their unwrapped widths,
    the room at each step shared in proportion to what each column lacks. Rich, left to
    itself, would shrink the widest wrapping column first, below its longest word if need be;
    here a word is folded only when the longest words cannot all fit."""
    wrapping = [h for h in headers if h in wrap]
    fixed = sum(_least_width(h, rows, wrap) for h in headers if h not in wrap)
    room = width - TABLE_OVERHEAD - fixed - COLUMN_OVERHEAD * len(wrapping)
    widths = dict.fromkeys(wrapping, 0)
    for target in (wrap, {h: _longest_word(h, rows, wrap[h]) for h in wrapping},
                   {h: _longest_line(h, rows) for h in wrapping}):
        lack = {h: max(0, target[h] - widths[h]) for h in wrapping}
        given = _share(room - sum(widths.values()), lack)
        widths = {h: widths[h] + given[h] for h in wrapping}
    return {h: max(1, w) for h, w in widths.items()}


def _share(total: int, weights: dict[str, int]) -> dict[str, int]:
    """`total` split in proportion to `weights`, none getting more than its weight."""
    weight = sum(weights.values())
    if weight <= total:
        return dict(weights)
    return {key: max(0, total) * part // weight for key, part in weights.items()}


def _least_width(header: str, rows: list[dict], wrap: Mapping[str, int]) -> int:
    """A column's narrowest width with every cell whole, its border and padding included."""
    if header in wrap:
        return _longest_word(header, rows, wrap[header]) + COLUMN_OVERHEAD
    return _longest_line(header, rows) + COLUMN_OVERHEAD


def _longest_line(header: str, rows: list[dict]) -> int:
    return max(len(line) for text in _texts(header, rows) for line in text.split("\n"))


def _longest_word(header: str, rows: list[dict], floor: int) -> int:
    return max(floor, *(len(word) for text in _texts(header, rows) for word in text.split()))


def _texts(header: str, rows: list[dict]) -> list[str]:
    """A column's header and cells, as plain text."""
    return [header, *(plain(row[header]) for row in rows)]


@dataclass
class FittedTable:
    """A table that fits the width it is printed at: columns are dropped in `order` until
    every cell prints whole (whole words in the columns of `wrap`, see fit_columns), and the
    caption names them. Printed as it is, it fits the console's width, so that a view need
    not be told the width; `table(width)` builds the rich Table for a given one."""

    title: str
    headers: list[str]
    rows: list[dict]
    justify: Mapping[str, str] = field(default_factory=dict)  # a header not in it: left
    order: tuple[str, ...] = ()
    wrap: Mapping[str, int] = field(default_factory=dict)
    caption: str = ""
    elsewhere: str = ""  # where a dropped column can still be read, if anywhere

    def __post_init__(self) -> None:
        """Cells, title and caption may hold the user's text (names, descriptions, errors):
        made safe for the terminal before any width is measured (safe_text.terminal)."""
        self.title = safe_text.terminal(self.title)
        self.caption = safe_text.terminal(self.caption, limit=None)
        self.rows = [{h: _safe_cell(cell) for h, cell in row.items()} for row in self.rows]

    def table(self, width: int | None) -> Table:
        headers, caption, widths = self.headers, self.caption, {}
        if width is not None:
            headers, dropped = fit_columns(self.headers, self.rows, width, self.order,
                                           self.wrap)
            caption += dropped_note(width, dropped, self.elsewhere)
            widths = wrap_widths(headers, self.rows, width, self.wrap)
        # Text, not str: a title or caption is never read as rich markup ('[red]')
        table = Table(title=_annotation(self.title, "table.title"), title_justify="left",
                      caption=_annotation(caption.strip(), "table.caption"),
                      caption_justify="left")
        for header in headers:
            wraps = header in self.wrap
            # fold: a word longer than its column (a path) is broken, not cut off
            table.add_column(header, justify=self.justify.get(header, "left"),
                             no_wrap=not wraps, width=widths.get(header),
                             overflow="fold" if wraps else "ellipsis")
        for cells in self.rows:
            table.add_row(*(_cell(cells[h]) for h in headers))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table(options.max_width)


def dropped_note(width: int, dropped: list[str], elsewhere: str = "") -> str:
    """' Not shown at 80 columns: kind, IQR (a wider terminal, or results.csv, has them).'"""
    if not dropped:
        return ""
    also = f", or {elsewhere}," if elsewhere else ""
    return (f" Not shown at {width} columns: {', '.join(dropped)} (a wider terminal{also} has "
            "them).")


def _annotation(text: str, style: str) -> Text | None:
    """A title or caption as Text, never read as rich markup ('[red]' stays as typed), in
    the style rich gives a str one."""
    return Text(text, style=style) if text else None


def _safe_cell(cell):
    """A cell with its control characters escaped; a Text keeps its style."""
    text = plain(cell)
    safe = safe_text.terminal(text)
    if isinstance(cell, Text):
        return cell if safe == text else Text(safe, style=cell.style)
    return safe


def _cell(cell) -> Text:
    """A cell is data, never rich markup: '[axes M, N]' would vanish as an unknown tag."""
    return cell if isinstance(cell, Text) else Text(str(cell))


def plain(cell) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _cells(result: R.Result) -> dict:
    """The row of one result, by column header (the baseline verdict is added by the table)."""
    label, style = STATUS_STYLE.get(result.status, (result.status, ""))
    if marking(result):
        label, style = label + "*", "bold red"  # e.g. memcheck (--sanitize) found errors
    # Numbers only for correct rows: a wrong answer's speed is not worth reading; a SUSPECT
    # row keeps its figures (they show why), never a speedup.
    summary = result.summary if result.correct else None
    name = result.variant + (" (base)" if result.baseline else "") + (
        " (alloc)" if result.build.allocates_output else "")
    return {
        "variant": name,
        "kind": result.kind,
        "mode": result.mode,
        "check": Text(label, style=style),
        "median": fmt.duration(summary.median, min(summary.significant_digits, 4))
        if summary else "-",
        "kernels": _kernels_cell(result),
        "±CI": fmt.percent(summary.rel_ci) if summary else "-",
        "IQR": fmt.percent(summary.rel_iqr) if summary else "-",
        "n": str(summary.n) if summary else "-",
        "TFLOP/s": fmt.rate(result.tflops if summary else None),
        "GB/s": fmt.rate(result.gbps if summary else None),
        "of roof": _roof_cell(result) if summary else "-",
        "vs base": _vs_base_cell(result),
        "build": _build_cell(result),
        **(CORRECTNESS_ONLY_CELLS if R.correctness_only(result) and result.correct else {}),
    }


# A correctness-only row (records/result.correctness_only) as the table shows it: its
# check, and "interp." for its time, in words rather than dimmed digits: a CI log, a
# golden file and markdown have no dim, and "31 ms" in the median column reads as a
# benchmark however faint. No build time either: the interpreter compiles nothing, and
# its first call's 120 ms is no JIT. The worker does not time such a row (run/worker/execute.py);
# runs saved before that keep their times in results.json, and show the same cells.
CORRECTNESS_ONLY_CELLS = {"median": Text(INTERPRETED, style="dim"),
                          **dict.fromkeys(("±CI", "IQR", "n", "TFLOP/s", "GB/s", "of roof",
                                           "vs base", "build"), "-")}


def _vs_base_cell(result: R.Result) -> str:
    """'1.86x±0.04': the speedup with its 95% CI (issue 28), as compare shows its ratio;
    '1.86x' where there is none (the baseline itself, few samples, an older results.json)."""
    if result.speedup is None or result.speedup_ci is None:
        return fmt.ratio(result.speedup)
    return ratio_with_ci(result.speedup, *result.speedup_ci)


def _multi(result: R.Result) -> bool:
    return result.device_work is not None and not result.device_work.single


def _kernels_cell(result: R.Result) -> str:
    """'7 span', '1+1m sum': device ops per call and which time the median is; '1' for one
    kernel, '-' where nothing was counted (a CPU run, or a call neither seen nor captured)."""
    work = result.device_work
    if work is None:
        return "-"
    if work.single:
        return "1"
    return f"{work.label()} {result.timed_quantity}"


def _roof_cell(result: R.Result) -> str:
    """'97% mem' / '11% comp': the fraction of the roof at this intensity, and which roof;
    a compute roof of another precision than the dtype's own is named: '85% tf32'."""
    if not result.roof:
        return "-"
    return (f"{fmt.percent(result.roof.fraction, 0)} "
            f"{precision.roof_label(result.roof, result.dtype)}")


def group_notes(group: list[R.Result]) -> list[str]:
    """What the table has no room for: why a row failed or was skipped, and warnings
    (none about a correctness-only row's time, which is no benchmark to warn about)."""
    notes, seen, warned = [], set(), {}
    for r in group:
        label = f"{r.variant} [{r.mode}]" if len({x.mode for x in group}) > 1 else r.variant
        why = note(r)
        if r.status != R.OK and why and (r.variant, why) not in seen:
            seen.add((r.variant, why))
            notes.append(f"{r.variant}: {why}{source_below(r)}")
        if not R.correctness_only(r):
            for w in r.warnings:
                if r.status != R.OK and why and w.message in why:
                    continue  # a SUSPECT row's reason, said in its own note already
                warned.setdefault((w.code, w.remedy), []).append((label, w.message))
        build_note = r.build.note
        if build_note and (r.variant, build_note) not in seen:
            seen.add((r.variant, build_note))
            notes.append(f"{r.variant}: {build_note}")
    return notes + [_warning_note(said, remedy) for (_, remedy), said in warned.items()]


def _warning_note(said: list[tuple[str, str]], remedy: str) -> str:
    """One note for one warning of several rows, its remedy said once: 'torch, cuda: IQR
    is 7% of the median — ...' when they say the same, each row's words otherwise."""
    labels = ", ".join(label for label, _ in said)
    if len({message for _, message in said}) == 1:
        return f"{labels}: {said[0][1]} — {remedy}"
    heads = {message.partition(": ")[0] for _, message in said}
    if len(heads) == 1 and all(": " in message for _, message in said):
        details = "; ".join(f"{label}: {message.partition(': ')[2]}" for label, message in said)
        return f"{labels}: {heads.pop()} ({details}) — {remedy}"
    return "; ".join(f"{label}: {message}" for label, message in said) + f" — {remedy}"


def source_below(result: R.Result) -> str:
    """The line of the user's source where the row's error happened, on a line of its own
    under the message ('' when none is known): records/features/error_site.py."""
    source = (result.extra(ERROR_SITE.name) or {}).get("source")
    return f"\n    {source}" if source else ""


def _build_cell(result: R.Result) -> str:
    """Build (or Triton JIT) time; 'cached' when an earlier build was reused."""
    if result.compile_s is None or result.kind == "torch":
        return "-"
    if result.compile_cached:
        if result.compile_s < 1e-3:  # reused within the same worker process
            return "cached"
        return f"cached {fmt.duration(result.compile_s, 2)}"
    return fmt.duration(result.compile_s, 2)


def note(result: R.Result) -> str:
    """A FAIL row's failing check (the timed calls' re-check, else the first check), or
    its error when no check failed (a variant blamed for its side effects)."""
    if result.status == R.FAIL:
        for check in (result.recheck, result.check):
            if check and not check.passed:
                return check.summary()
    return result.error or ""


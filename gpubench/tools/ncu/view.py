"""ncu results for people and files: rich renderables, JSON and flat CSV rows. Pure: no printing.

One kernel reads as ncu's own details page does, top down: which launch it was, how close it
came to the GPU's limits (speed of light, occupancy, where it sits on the DRAM roofline), then
ncu's hints, the biggest estimated win first, each hint about memory access or stalls with the
source lines that hold most of what it counts (profilers/ncu_source.py). Several variants of
one kernel read side by side, with the hints that appear, disappear or shrink from one variant
to the next.

Everything fits the terminal it is printed on, without a word cut in two: a hint's text wraps
at spaces under its heading, and the tables are report/table.FittedTable (columns dropped by
priority, the caption naming them; long cells wrapped at spaces).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

from rich.bar import Bar
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpubench import format as fmt
from gpubench.report.table import FittedTable
from gpubench.tools.ncu import rules as ncu_rules
from gpubench.tools.ncu import source as ncu_source
from gpubench.tools.ncu.kernel_profile import KernelProfile
from gpubench.tools.ncu.metrics import ALL_METRICS
from gpubench.tools.ncu.rules import RuleResult
from gpubench.tools.ncu.source import SourceHit

SCHEMA_VERSION = 1

TYPE_STYLE = {"ERROR": "bold red", "OPT": "yellow", "WRN": "magenta", "INF": "dim"}
CHANGE_STYLE = {ncu_rules.NEW: "bold red", ncu_rules.GONE: "green", ncu_rules.SHRANK: "green",
                ncu_rules.GREW: "red", ncu_rules.SAME: "dim"}

# Percentages drawn as bars in the speed-of-light panel, in ncu's order.
SOL_BARS = ("compute_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
            "l1_throughput_pct", "l2_throughput_pct", "achieved_occupancy_pct",
            "theoretical_occupancy_pct", "l1_hit_rate_pct", "l2_hit_rate_pct")
# Rows of the variant comparison.
COMPARED = ("duration_ns", "compute_throughput_pct", "memory_throughput_pct",
            "dram_throughput_pct", "l2_throughput_pct", "achieved_occupancy_pct",
            "l2_hit_rate_pct", "waves_per_sm", "dram_bytes_per_s", "fp32_flop_per_s",
            "arithmetic_intensity")
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# The longest line of a hint's text, however wide the terminal: a longer line is hard to
# follow back to the start of the next one.
MEASURE = 100
# The focus metrics listed under a hint: ncu's first ones name what the hint is about; the
# JSON (--json) has all of them.
FOCUS_SHOWN = 3

# Said under a kernel read with a reader that cannot list sections, so that nobody takes a
# section's absence from the JSON (or a check that was skipped) for ncu's word.
SECTIONS_UNKNOWN = ("sections: this ncu_report module (the copy bundled with ncu) cannot list "
                    "a report's sections; only those its hints name are known, so requested "
                    "sections were not checked (pip install ncu-report to check them)")

ProfilesByVariant = Mapping[str, KernelProfile | Sequence[KernelProfile]]


# --- one kernel ------------------------------------------------------------------------------


def profile_view(profile: KernelProfile, include_info: bool = False) -> Group:
    """Header, speed-of-light panel and hints of one kernel launch (and what is unknown)."""
    parts = [kernel_header(profile), sol_panel(profile),
             hints_table(profile, include_info=include_info)]
    if not profile.sections_complete:
        parts.append(Text(SECTIONS_UNKNOWN, style="dim"))
    return Group(*parts)


def kernel_header(profile: KernelProfile) -> Text:
    """'square_kernel  grid (4, 1, 1)  block (256, 1, 1)  16 regs  2.24 us' plus where it ran."""
    text = Text(profile.base_name or profile.name, style="bold")
    text.append(f"  grid {_dims(profile.grid)}  block {_dims(profile.block)}")
    regs = profile.registers_per_thread
    text.append(f"  {regs if regs is not None else '-'} regs/thread")
    text.append(f"  {fmt.duration(_seconds(profile.duration_ns))}", style="bold")
    where = [f"launch {profile.launch_index}"]
    if profile.device:
        where.append(profile.device)
    if profile.nvtx_range:
        where.append(f"NVTX {profile.nvtx_range}")
    text.append(f"\n{profile.name}  ({', '.join(where)})", style="dim")
    return text


def sol_panel(profile: KernelProfile) -> Panel:
    """Throughputs as % of peak with bars, occupancy, hit rates, then the roofline position."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(no_wrap=True)
    for key in SOL_BARS:
        value = profile.metrics.get(key)
        if value is not None:
            bar = Bar(100, 0, max(0.0, min(value, 100.0)), width=24, color=_bar_color(value))
            grid.add_row(ALL_METRICS[key].label, f"{value:.1f}%", bar)
    waves = profile.metrics.get("waves_per_sm")
    if waves is not None:
        grid.add_row(ALL_METRICS["waves_per_sm"].label, fmt.significant(waves), "")
    parts: list = [grid]
    roofline = roofline_text(profile)
    if roofline:
        parts.append(Text(roofline))
    return Panel(Group(*parts), title="speed of light", title_align="left")


def roofline_text(profile: KernelProfile) -> str:
    """Where the kernel sits on the DRAM roofline, in one line ('' without the metrics)."""
    m = profile.metrics
    if profile.roofline_bound is None:
        return ""
    flops = m.get("fp32_flop_per_s", 0.0) + m.get("fp64_flop_per_s", 0.0)
    fp64 = m.get("fp64_flop_per_s", 0.0) > m.get("fp32_flop_per_s", 0.0)
    peak = m.get("peak_fp64_flop_per_s" if fp64 else "peak_fp32_flop_per_s")
    bandwidth, peak_bandwidth = m.get("dram_bytes_per_s"), m.get("peak_dram_bytes_per_s")
    return (f"DRAM roofline: {fmt.significant(m['arithmetic_intensity'])} FLOP/B "
            f"(ridge {fmt.significant(m['ridge_point'])}), {profile.roofline_bound}-bound; "
            f"{'FP64' if fp64 else 'FP32'} {si(flops, 'FLOP/s')}{_of_peak(flops, peak)}, "
            f"DRAM {si(bandwidth, 'B/s')}{_of_peak(bandwidth, peak_bandwidth)}")


def hints_table(profile: KernelProfile, include_info: bool = False,
                limit: int | None = None) -> Table:
    """ncu's hints ranked by estimated speedup (global before local); INF rows on request.

    One entry a hint, the way ncu's own details page prints them: rank, type, estimate and
    heading on one line, what ncu says below it, wrapped at spaces to the terminal (at most
    MEASURE), then the focus metrics, one a line, then the hint's top source lines when the
    report has source counters. A column of its own would leave that text a few words wide
    on an 80-column terminal, and cut the long metric names."""
    hints = profile.hints(include_info)
    shown = hints if limit is None else hints[:limit]
    caption = ("est. speedup: ncu's estimate of the time saved; global = share of the whole "
               "kernel, local = of the part the hint names.")
    if len(shown) < len(hints):
        caption += f" {len(hints) - len(shown)} more not shown."
    table = Table(title=f"ncu hints: {profile.base_name}", title_justify="left",
                  caption=caption, caption_justify="left", box=None, show_header=False,
                  pad_edge=False)
    table.add_column(justify="right", no_wrap=True)
    table.add_column(max_width=MEASURE, overflow="fold")  # a URL longer than a line
    estimate_width = max((len(_estimate(rule)) for rule in shown), default=0)
    for position, rule in enumerate(shown, start=1):
        table.add_row(str(position), _hint_entry(rule, estimate_width,
                                                 ncu_source.top_lines(profile, rule)))
    return table


def _hint_entry(rule: RuleResult, estimate_width: int, hits: Sequence[SourceHit] = ()
                ) -> Group:
    """'OPT  51.59% global  Long Scoreboard Stalls (Warp State Statistics)', what ncu says,
    its focus metrics, its source lines."""
    heading = Text.assemble((rule.type, TYPE_STYLE.get(rule.type, "")), "  ",
                            _estimate(rule).rjust(estimate_width), "  ", (rule.heading, "bold"))
    if rule.section_name:
        heading.append(f" ({rule.section_name})", style="dim")
    parts = [heading, Text(rule.message)]
    focus = focus_text(rule)
    if focus:
        # a grid, so that a metric wrapped at its ' = ' goes on under the names, not under
        # 'focus:'
        grid = Table.grid(padding=(0, 1))
        grid.add_row(Text("focus:", style="dim"), Text(focus, style="dim", overflow="fold"))
        parts.append(grid)
    if hits:
        parts.append(source_grid(hits))
    return Group(*parts)


def source_grid(hits: Sequence[SourceHit]) -> Table:
    """'source: naive.cu:9  `y[c * n + r] = x[r * n + c];`  97% of excess global sectors', one
    row a line. A grid, so that a row too long for the terminal wraps at spaces under its
    location, not under 'source:'; location, text and share share one cell, since a column
    of locations as wide as 'triton/language/standard.py:170' would leave the text a few
    words wide at 80 columns."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")  # a token longer than a line
    for index, hit in enumerate(hits):
        grid.add_row(Text("source:" if index == 0 else "", style="dim"), _hit_text(hit))
    return grid


def _hit_text(hit: SourceHit) -> Text:
    """'naive.cu:9  `code`  97% of excess global sectors'; no code when the report has no
    text."""
    text = Text(f"{hit.file}:{hit.line}", style="bold")
    if hit.text:
        text.append("  ").append(f"`{hit.text}`", style="cyan")
    return text.append(f"  {ncu_source.share_text(hit.share)} of {hit.metric.label}")


def _estimate(rule: RuleResult) -> str:
    return ncu_rules.speedup_text(rule) or "no est."


def focus_text(rule: RuleResult, limit: int = FOCUS_SHOWN) -> str:
    """'launch__grid_size = 4' lines for the first `limit` focus metrics."""
    return "\n".join(f"{f.name} = {_value(f.value)}" for f in rule.focus_metrics[:limit])


# --- several variants ------------------------------------------------------------------------


def comparison_table(profiles_by_variant: Mapping[str, KernelProfile]) -> Group:
    """Key metrics side by side, then the hint changes from each variant to the next."""
    return Group(metrics_comparison(profiles_by_variant), hint_changes_table(profiles_by_variant))


# The narrowest a variant's column of the comparison gets: a number and its unit
# ('338 GFLOP/s') stay on one line; the longer cells (the top hint) wrap at spaces.
VARIANT_MIN = 11
# Where a hint change's heading wraps at the narrowest: two or three words a line.
CHANGE_HINT_MIN = 20


def metrics_comparison(profiles_by_variant: Mapping[str, KernelProfile]) -> FittedTable:
    """Key metrics, one column a variant; the columns fit the terminal, their longer cells
    wrapped at spaces."""
    variants = list(profiles_by_variant)
    profiles = list(profiles_by_variant.values())
    lines = [("kernel", [p.base_name for p in profiles]),
             # no spaces inside a tuple: a narrow column wraps at the ' x ' only
             ("grid x block", [f"{_dims(p.grid, ',')} x {_dims(p.block, ',')}"
                               for p in profiles]),
             ("registers/thread", [str(p.registers_per_thread or "-") for p in profiles])]
    lines += [(ALL_METRICS[key].label, [metric_text(key, p.metrics.get(key)) for p in profiles])
              for key in COMPARED if any(key in p.metrics for p in profiles)]
    top = [p.hints()[0] if p.hints() else None for p in profiles]
    lines += [("DRAM roofline", [p.roofline_bound or "-" for p in profiles]),
              ("hints (OPT/WRN)", [str(len(p.hints())) for p in profiles]),
              ("top hint", [f"{r.heading} ({ncu_rules.speedup_text(r) or 'no est.'})"
                            if r else "-" for r in top])]
    rows = [{"metric": label, **dict(zip(variants, cells, strict=True))}
            for label, cells in lines]
    return FittedTable("ncu: variants side by side", ["metric", *variants], rows,
                       justify=dict.fromkeys(variants, "right"),
                       wrap=dict.fromkeys(variants, VARIANT_MIN))


def hint_changes_table(profiles_by_variant: Mapping[str, KernelProfile],
                       include_info: bool = False) -> FittedTable:
    """For each pair of consecutive variants: the hints that are new, gone, shrank or grew."""
    rows = []
    for before, after in pairwise(profiles_by_variant):
        changes = ncu_rules.compare_hints(profiles_by_variant[before].rules,
                                          profiles_by_variant[after].rules, include_info)
        rows += [_change_row(f"{before} -> {after}", change) for change in changes
                 if change.change != ncu_rules.SAME]
    return FittedTable("ncu hints from one variant to the next",
                       ["from -> to", "hint", "change", "before", "after"], rows,
                       wrap={"hint": CHANGE_HINT_MIN},
                       caption="est. speedups in % of time; changes of 1 point or less not "
                               "shown.")


def _change_row(pair: str, change: ncu_rules.HintChange) -> dict:
    heading = Text(change.heading)
    if change.section_name:
        heading.append(f" ({change.section_name})", style="dim")
    return {"from -> to": pair, "hint": heading,
            "change": Text(change.change, style=CHANGE_STYLE[change.change]),
            "before": _pct(change.before_pct, change.change == ncu_rules.NEW),
            "after": _pct(change.after_pct, change.change == ncu_rules.GONE)}


# --- files -----------------------------------------------------------------------------------


def profiles_to_json(profiles_by_variant: ProfilesByVariant) -> dict:
    """Everything, nested: per variant its kernels, metrics, raw ncu values and all rules."""
    return {
        "schema": SCHEMA_VERSION,
        "variants": [{"variant": variant, "kernels": [profile_to_dict(p) for p in profiles]}
                     for variant, profiles in _normalized(profiles_by_variant).items()],
    }


def profile_to_dict(profile: KernelProfile) -> dict:
    return {
        "name": profile.name,
        "base_name": profile.base_name,
        "function_name": profile.function_name,
        "launch_index": profile.launch_index,
        "grid": list(profile.grid) if profile.grid else None,
        "block": list(profile.block) if profile.block else None,
        "registers_per_thread": profile.registers_per_thread,
        "duration_ns": profile.duration_ns,
        "device": profile.device,
        "nvtx_range": profile.nvtx_range,
        "nvtx": {domain: list(ranges) for domain, ranges in profile.nvtx.items()},
        "roofline_bound": profile.roofline_bound,
        "metrics": dict(profile.metrics),
        "ncu_metrics": dict(profile.raw_metrics),
        "sections": dict(profile.sections),
        "sections_complete": profile.sections_complete,
        "rules": [rule_to_dict(r, ncu_source.top_lines(profile, r))
                  for r in ncu_rules.rank(profile.rules, include_info=True)],
        "source": source_to_dict(profile),
    }


def source_to_dict(profile: KernelProfile) -> dict | None:
    """The per-line counters and kernel totals the hints' lines come from (not the files'
    text: a line's text is in its hint's source_lines); None without source counters."""
    if profile.source is None:
        return None
    return {"totals": dict(profile.source.totals),
            "lines": [{"file": line.file, "line": line.line, "counters": dict(line.counters)}
                      for line in profile.source.lines]}


def rule_to_dict(rule: RuleResult, hits: Sequence[SourceHit] = ()) -> dict:
    return {
        "key": ncu_rules.hint_key(rule),
        "rule_id": rule.rule_id,
        "section_id": rule.section_id,
        "section_name": rule.section_name,
        "name": rule.name,
        "title": rule.title,
        "type": rule.type,
        "speedup_type": rule.speedup_type,
        "estimated_speedup_pct": rule.estimated_speedup_pct,
        "message": rule.message,
        "raw_message": rule.raw_message,
        "focus_metrics": [f._asdict() for f in rule.focus_metrics],
        "source_lines": [ncu_source.hit_to_dict(hit) for hit in hits],
    }


ROW_COLUMNS = ("variant", "kernel", "launch_index", "row", "key", "label", "value", "unit",
               "rank", "type", "speedup_type", "estimated_speedup_pct", "section", "message")


def profiles_to_rows(profiles_by_variant: ProfilesByVariant) -> list[dict]:
    """Flat rows for CSV, all with ROW_COLUMNS: one per metric and one per hint of each kernel."""
    rows = []
    for variant, profiles in _normalized(profiles_by_variant).items():
        for profile in profiles:
            rows += _metric_rows(variant, profile) + _hint_rows(variant, profile)
    return rows


def _metric_rows(variant: str, profile: KernelProfile) -> list[dict]:
    return [_row(variant, profile, row="metric", key=key, label=ALL_METRICS[key].label,
                 value=value, unit=ALL_METRICS[key].unit)
            for key, value in profile.metrics.items()]


def _hint_rows(variant: str, profile: KernelProfile) -> list[dict]:
    ranked = ncu_rules.rank(profile.rules, include_info=True)
    return [_row(variant, profile, row="hint", key=ncu_rules.hint_key(rule), label=rule.heading,
                 value=rule.estimated_speedup_pct, unit="%", rank=position, type=rule.type,
                 speedup_type=rule.speedup_type, estimated_speedup_pct=rule.estimated_speedup_pct,
                 section=rule.section_id or rule.section_name, message=rule.message)
            for position, rule in enumerate(ranked, start=1)]


def _row(variant: str, profile: KernelProfile, **values) -> dict:
    row = dict.fromkeys(ROW_COLUMNS)
    row.update(variant=variant, kernel=profile.base_name, launch_index=profile.launch_index,
               **values)
    return row


def _normalized(profiles_by_variant: ProfilesByVariant) -> dict[str, list[KernelProfile]]:
    """Each variant's kernels as a list, whether it was given one profile or several."""
    return {variant: [value] if isinstance(value, KernelProfile) else list(value)
            for variant, value in profiles_by_variant.items()}


# --- formatting ------------------------------------------------------------------------------


def metric_text(key: str, value: float | None) -> str:
    """A metric as a table cell, in the unit its key implies."""
    if value is None:
        return "-"
    unit = ALL_METRICS[key].unit if key in ALL_METRICS else ""
    if unit == "ns":
        return fmt.duration(value * 1e-9)
    if unit == "%":
        return f"{value:.1f}%"
    if unit in ("B/s", "FLOP/s", "Hz", "B"):
        return si(value, unit)
    return fmt.significant(value)


def si(value: float | None, unit: str) -> str:
    """2.33e12, 'B/s' -> '2.33 TB/s'."""
    if value is None:
        return "-"
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{fmt.significant(value / scale)} {prefix}{unit}"
    return f"{fmt.significant(value)} {unit}"


def _of_peak(value: float | None, peak: float | None) -> str:
    return f" ({value / peak * 100:.1f}% of peak)" if value is not None and peak else ""


def _pct(value: float | None, absent_ok: bool) -> str:
    if value is None:
        return "" if absent_ok else "-"
    return f"{value:.4g}%"


def _value(value: float | str | None) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else fmt.significant(float(value))
    return "-" if value is None else str(value)


def _dims(dims: tuple[int, int, int] | None, separator: str = ", ") -> str:
    return "(?)" if dims is None else f"({separator.join(map(str, dims))})"


def _seconds(nanoseconds: float | None) -> float | None:
    return None if nanoseconds is None else nanoseconds * 1e-9


def _bar_color(pct: float) -> str:
    return "green" if pct >= 60 else "yellow" if pct >= 30 else "red"


SUMMARY_HEADERS = ["variant", "kernel", "ncu duration", "top SOL", "top hint", "est. speedup"]
# A narrow terminal loses the kernel's name first (the variant says which it is), then the
# top SOL figure (the table above has the rates); variant, duration and hint always stay.
SUMMARY_DROP_ORDER = ("kernel", "top SOL")
# Where the top hint (or an error) wraps at the narrowest: two or three words a line.
SUMMARY_HINT_MIN = 20


def summary_table(summaries: Mapping[str, dict]) -> FittedTable:
    """`gpubench run --ncu`: per variant, ncu's duration, top SOL % and top hint, fitted to the
    terminal."""
    rows = [_summary_row(variant, s) for variant, s in summaries.items()]
    return FittedTable("ncu (one profiled call per variant)", SUMMARY_HEADERS, rows,
                       order=SUMMARY_DROP_ORDER, wrap={"top hint": SUMMARY_HINT_MIN},
                       elsewhere="the .ncu-rep reports")


def _summary_row(variant: str, s: dict) -> dict:
    if "error" in s:
        cells = [variant, "-", "-", "-", Text(s["error"], style="red"), "-"]
    else:
        speedup = (f"{s['top_hint_speedup_pct']:.3g}% {s['top_hint_speedup_type'] or ''}".strip()
                   if s.get("top_hint_speedup_pct") is not None else "-")
        cells = [variant, s["kernel"], fmt.duration(_seconds(s["duration_ns"])),
                 f"{s['top_sol']} {_pct(s['top_sol_pct'], True)}", s["top_hint"] or "-", speedup]
    return dict(zip(SUMMARY_HEADERS, cells, strict=True))

"""The report's charts as Vega-Lite specs: plain dicts built from Results. Pure.

A spec is data, so tests read the charts without a browser, and the page only hands
each spec to vega-embed (and `report --svg/--png` to a headless browser). Four kinds:

- **roofline** (roofline_chart.py): the points under each precision's measured roof.
- **sweep**: when a family ran over several values of an axis: time (and the rate that
  sets the roof) against that axis, one line per variant, the 95% CI of the median as
  a band. Given two runs (an A/B report), BASE and NEW on the same chart: BASE dashed with
  its CI as the noise band, NEW solid, one colour per variant (chart_style.py).
- **compare**: NEW/BASE per point with its CI, coloured by verdict.
- **kernels**: a profile's top kernels.

SUSPECT and correctness-only rows are on none of them: see chart_rows.measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpubench.parsing import format_size
from gpubench.records.result import Result
from gpubench.report.chart_rows import correctness_only, measured, ncu_hint, point_row, tooltip
from gpubench.report.chart_style import SWEEP_HEIGHT, VariantColors, finish, line_width, run_dash
from gpubench.report.roofline_chart import roof_lines, roofline_spec

# The page and the tests reach every chart through this module.
__all__ = ["MAX_SWEEPS", "VariantColors", "compare_spec", "correctness_only", "kernels_spec",
           "measured", "ncu_hint", "overlay_sweeps", "point_row", "roof_lines",
           "roofline_spec", "sweep_specs", "sweeps"]

# More sweep charts than this in one family are not drawn (the table has every point):
# a cartesian sweep of three axes would otherwise bury the page.
MAX_SWEEPS = 12
BASE_RUN, NEW_RUN = "BASE", "NEW"


# ---------------------------------------------------------------- sweeps


def sweeps(results: Sequence[Result]) -> list[dict]:
    """The sweeps a family ran: for each (dtype, mode) and each setting of the other
    axes, the axis that varies most, when it took at least two values. Axes that move
    together (--sizes on matmul: M=N=K) make one sweep named 'M (=N=K)'."""
    groups: dict[tuple, list[Result]] = {}
    for r in measured(results):  # by axes too: an edited results.json may mix them
        groups.setdefault((r.dtype, r.mode, tuple(r.shape)), []).append(r)
    found = []
    for (dtype, mode, _axes), group in groups.items():
        axis, companions = _swept_axis(group)
        if axis is None:
            continue
        fixed_of = {r.key.text(): _fixed(r, axis, companions) for r in group}
        for fixed in dict.fromkeys(fixed_of.values()):
            members = [r for r in group if fixed_of[r.key.text()] == fixed]
            if len({r.shape[axis] for r in members}) >= 2:
                found.append({"dtype": dtype, "mode": mode, "axis": axis,
                              "companions": companions, "fixed": fixed, "results": members})
    return found[:MAX_SWEEPS]


def _swept_axis(group: list[Result]) -> tuple[str | None, tuple[str, ...]]:
    """(the axis with the most distinct values, the axes that are a function of it)."""
    axes = list(group[0].shape)
    counts = {a: len({r.shape[a] for r in group}) for a in axes}
    axis = max(axes, key=lambda a: counts[a])
    if counts[axis] < 2:
        return None, ()
    companions = tuple(a for a in axes if a != axis and counts[a] > 1
                       and len({(r.shape[axis], r.shape[a]) for r in group}) == counts[axis])
    return axis, companions


def _fixed(result: Result, axis: str, companions: tuple[str, ...]) -> str:
    return " ".join(f"{a}={v}" for a, v in result.shape.items()
                    if a != axis and a not in companions)


def overlay_sweeps(base: Sequence[Result], new: Sequence[Result], base_name: str,
                   new_name: str) -> list[dict]:
    """The sweeps of one family in two runs, each with both runs' points: BASE's and NEW's
    rows of one (dtype, mode, fixed axes) on one chart, not on two charts a page apart.
    A sweep only one run has is still drawn, with that run's lines alone."""
    labels = (f"{BASE_RUN} {base_name}", f"{NEW_RUN} {new_name}")
    in_base = {id(r) for r in base}
    found = sweeps([*base, *new])
    for sweep in found:
        sweep["runs"] = [labels[0] if id(r) in in_base else labels[1] for r in sweep["results"]]
        sweep["run_names"] = labels
    return found


def sweep_specs(sweep: dict, family: str, colors: VariantColors | None = None) -> list[dict]:
    """Two charts of one sweep: time, and the rate that sets the roof (GB/s for a
    memory-bound family, TFLOP/s otherwise), each with the CI as a band. `colors`: the
    report's, so a variant keeps its colour from chart to chart and family to family."""
    colors = colors or VariantColors(sweep["results"])
    rows = [point_row(r) for r in sweep["results"]]
    for row, result in zip(rows, sweep["results"], strict=True):
        row.update(_rate_band(result))
    for row, run in zip(rows, sweep.get("runs") or [], strict=False):
        row["run"] = run
    axis = sweep["axis"]
    values = [r[axis] for r in rows]
    chart = {"rows": rows, "axis": axis, "axis_title": _axis_title(sweep),
             "log_x": max(values) / max(min(values), 1) >= 8,  # sizes usually double
             "color": colors.encoding(r["variant"] for r in rows),
             "runs": sweep.get("run_names")}
    rate = "GB/s" if _memory_bound(sweep["results"]) else "TFLOP/s"
    title = f"{family} {sweep['dtype']} {sweep['mode']}" + (
        f" ({sweep['fixed']})" if sweep["fixed"] else "")
    key = "tflops" if rate == "TFLOP/s" else "gbps"
    return [_band_chart(chart, ("median_us", "ci_low_us", "ci_high_us"), "time (us, log)",
                        f"{title}: time", log_y=True),
            _band_chart(chart, (key, f"{key}_low", f"{key}_high"), rate, f"{title}: {rate}",
                        log_y=False)]


def _axis_title(sweep: dict) -> str:
    companions = sweep["companions"]
    return sweep["axis"] + (f" (={'='.join(companions)})" if companions else "")


def _memory_bound(results: Sequence[Result]) -> bool:
    bounds = [r.roof.bound for r in results if r.roof]
    if bounds:
        return bounds.count("memory") >= len(bounds) / 2
    return not any(r.flops for r in results)


def _rate_band(result: Result) -> dict:
    """Microseconds for the time axis, and the rates at the CI's ends (a shorter time is
    a higher rate, so the low rate comes from the high time)."""
    s = result.summary
    band = {"median_us": s.median * 1e6, "ci_low_us": s.ci_low * 1e6,
            "ci_high_us": s.ci_high * 1e6}
    for key, amount, scale in (("tflops", result.flops, 1e12), ("gbps", result.bytes_moved, 1e9)):
        if amount:
            band[key + "_low"] = amount / s.ci_high / scale
            band[key + "_high"] = amount / s.ci_low / scale
    return band


def _band_chart(chart: dict, fields: tuple[str, str, str], y_title: str, title: str,
                log_y: bool) -> dict:
    """Lines of `fields[0]` per variant over the swept axis, the CI band around them. In
    an overlay (chart["runs"]) only BASE has a band, its noise, and the stroke tells the
    runs apart: NEW's line inside BASE's band has not moved."""
    y, low, high = fields
    rows, axis = chart["rows"], chart["axis"]
    values = sorted({row[axis] for row in rows})
    # Ticks at the measured values, named as the tables name them (2^20, not 1,048,576).
    names = ", ".join(f"'{v}': '{format_size(v)}'" for v in values)
    x = {"field": axis, "type": "quantitative", "title": chart["axis_title"],
         # Not 'nice': a linear axis rounded 4096 up to 4500, a strip of nothing.
         "scale": {"type": "log", "base": 2, "nice": False, "padding": 14} if chart["log_x"]
         else {"zero": False, "nice": False, "padding": 14},
         "axis": {"values": values, "labelExpr": f"({{{names}}})[datum.value] || datum.label"}}
    y_scale = {"type": "log"} if log_y else {"zero": True}
    band = {"mark": {"type": "errorband", "opacity": 0.22},
            "encoding": {"y": {"field": low, "type": "quantitative", "title": y_title,
                               "scale": y_scale},
                         "y2": {"field": high}, "color": {**chart["color"], "legend": None}}}
    line = {"mark": {"type": "line", "point": True},
            "encoding": {"y": {"field": y, "type": "quantitative", "title": y_title,
                               "scale": y_scale},
                         "color": chart["color"], "strokeWidth": line_width(),
                         "tooltip": tooltip(rows, ("run",) if chart["runs"] else ())}}
    if chart["runs"]:
        band["transform"] = [{"filter": {"field": "run", "equal": chart["runs"][0]}}]
        line["encoding"]["strokeDash"] = run_dash(chart["runs"])
        line["encoding"]["detail"] = {"field": "run", "type": "nominal"}
    return finish({
        "title": title, "width": "container", "height": SWEEP_HEIGHT,
        "data": {"values": rows}, "encoding": {"x": x},
        # The band's colour has no legend: with legends merged, Vega-Lite then drops the
        # lines' one too, so each layer keeps its own (one shared colour scale still).
        "resolve": {"legend": {"color": "independent"}},
        "layer": [band, line],
    })


# ---------------------------------------------------------------- compare


def compare_spec(points: Sequence, title: str) -> dict | None:
    """NEW/BASE per compared point with its 95% CI, log x, coloured by verdict. A point
    SUSPECT or failed on either side has no comparison, so no place here."""
    rows = []
    for point in points:
        c = point.comparison
        if c is None or not math.isfinite(c.ratio) or c.ratio <= 0:
            continue
        has_ci = math.isfinite(c.ci_low) and c.ci_low > 0
        rows.append({"point": point.key.label(), "ratio": c.ratio,
                     "ci_low": c.ci_low if has_ci else c.ratio,
                     "ci_high": c.ci_high if has_ci else c.ratio,
                     "verdict": c.verdict, "change": f"{(c.ratio - 1) * 100:+.1f}%",
                     "why": c.reason})
    if not rows:
        return None
    y = {"field": "point", "type": "nominal", "sort": None, "title": None}
    # Not 'nice': a log scale rounds out to whole decades, squeezing +-5% into a pixel.
    x = {"field": "ci_low", "type": "quantitative",
         "scale": {"type": "log", "nice": False, "padding": 12},
         "title": "NEW / BASE median (left of 1: faster)"}
    return finish({
        "title": title, "width": "container",
        "height": {"step": 18}, "data": {"values": rows},
        "layer": [
            {"mark": {"type": "rule"}, "encoding": {"y": y, "x": x, "x2": {"field": "ci_high"},
                                                    "color": _verdict_color()}},
            {"mark": {"type": "point", "filled": True},
             "encoding": {"y": y, "x": {"field": "ratio", "type": "quantitative"},
                          "color": _verdict_color(),
                          "tooltip": [{"field": f, "type": "nominal"}
                                      for f in ("point", "change", "verdict", "why")]}},
            {"data": {"values": [{"one": 1}]}, "mark": {"type": "rule", "strokeDash": [4, 4]},
             "encoding": {"x": {"field": "one", "type": "quantitative"}}},
        ],
    })


def _verdict_color() -> dict:
    return {"field": "verdict", "type": "nominal",
            "scale": {"domain": ["FASTER", "SAME", "UNSURE", "SLOWER"],
                      "range": ["#2a9d3f", "#888888", "#d89a00", "#d62728"]}}


# ---------------------------------------------------------------- profile


def kernels_spec(groups: Sequence[dict], title: str, top: int = 15) -> dict | None:
    """A program's top kernels (or CPU ops) by total time, coloured by who wrote them."""
    from gpubench.format import compact_name

    rows = [{"kernel": compact_name(g["name"]), "origin": g["origin"], "calls": g["calls"],
             "total_ms": g["total_us"] / 1e3, "share": f"{g['share'] * 100:.1f}%",
             "name": g["name"][:300]} for g in groups[:top]]
    if not rows:
        return None
    return finish({
        "title": title, "width": "container", "height": {"step": 16},
        "data": {"values": rows},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "kernel", "type": "nominal", "sort": None, "title": None},
            "x": {"field": "total_ms", "type": "quantitative", "title": "total time (ms)"},
            "color": {"field": "origin", "type": "nominal"},
            "tooltip": [{"field": f, "type": "nominal"}
                        for f in ("name", "origin", "calls", "total_ms", "share")]},
    })

"""The report's charts as Vega-Lite specs: plain dicts built from Results. Pure.

A spec is data, so tests read the charts without a browser, and the page only hands
each spec to vega-embed. Three kinds:

- **roofline**: log-log, x = arithmetic intensity (FLOP/byte of the family's cost
  model), y = achieved TFLOP/s; the measured ceilings (`gpubench peak`) drawn as
  min(bandwidth * x, peak) per precision, every passing variant x shape x dtype x mode as a
  point. Distance below the roof is the headroom.
- **sweep**: when a family ran over several values of an axis: time (and the rate that
  sets the roof) against that axis, one line per variant, the 95% CI of the median as
  a band.
- **compare**: NEW/BASE per point with its CI, coloured by verdict.

SUSPECT rows (records/result.py) are on none of them: see `measured`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gpubench import format as fmt
from gpubench.parsing import format_size
from gpubench.records.result import Result, correctness_only
from gpubench.timing import precision

WIDTH, HEIGHT = 560, 320
# The roof lines reach this factor past the points on both sides, so a point near the
# edge still shows the roof it is under.
X_MARGIN = 4.0
# More sweep charts than this in one family are not drawn (the table has every point):
# a cartesian sweep of three axes would otherwise bury the page.
MAX_SWEEPS = 12


# ---------------------------------------------------------------- point rows


def point_row(result: Result) -> dict:
    """What a chart knows about one measured point: the numbers and their text forms
    (the tooltip shows the text, the axes use the numbers)."""
    summary = result.summary
    roof = result.roof or {}
    ncu = result.ncu or {}
    row = {
        "variant": result.variant + (" (base)" if result.baseline else ""),
        "dtype": result.dtype, "mode": result.mode, "shape": result.shape.label(),
        "median_s": summary.median, "ci_low_s": summary.ci_low, "ci_high_s": summary.ci_high,
        "median": fmt.duration(summary.median, min(summary.significant_digits, 4)),
        "tflops": result.tflops, "gbps": result.gbps,
        "TFLOP/s": fmt.rate(result.tflops), "GB/s": fmt.rate(result.gbps),
        "intensity": roof.get("intensity"),
        # The compute roof it is under: its variant's declared precision or its dtype's.
        "roof of": roof.get("compute") or precision.of_dtype(result.dtype),
        "of roof": (f"{fmt.percent(roof['fraction'], 0)} "
                    f"{precision.roof_label(roof, result.dtype)}") if roof else "-",
        "vs base": fmt.ratio(result.speedup),
    }
    row.update({axis: value for axis, value in result.shape.items()})
    if ncu.get("top_hint"):
        row["ncu hint"] = ncu_hint(ncu)
    return row


def ncu_hint(ncu: dict) -> str:
    """'Uncoalesced Global Accesses (est. 42% speedup)'; '' without a hint."""
    if not ncu.get("top_hint"):
        return ""
    speedup = ncu.get("top_hint_speedup_pct")
    return ncu["top_hint"] + (f" (est. {speedup:.0f}% speedup)" if speedup else "")


def measured(results: Iterable[Result]) -> list[Result]:
    """The results a chart can place: passed, with a median. SUSPECT rows are left out,
    not marked: their time is not to be trusted (0 ns, 40x the roof), and on a log axis it
    would stretch the chart and sit beside honest points as if it won; the page says how
    many were left out, and lists them with their reason. Correctness-only rows (the Triton
    interpreter) too: their 1e-7 TFLOP/s would stretch the axes by four decades."""
    return [r for r in results if r.passed and r.summary is not None and not correctness_only(r)]


TOOLTIP_FIELDS = ("variant", "shape", "dtype", "mode", "median", "TFLOP/s", "GB/s",
                  "of roof", "vs base")


def variant_color(results: Sequence[Result]) -> dict:
    """One colour per variant across a family's charts, including variants that failed
    somewhere: a variant missing from one chart must not shift the others' colours."""
    domain = sorted({r.variant + (" (base)" if r.baseline else "") for r in results})
    return {"field": "variant", "type": "nominal", "scale": {"domain": domain}}


def _tooltip(rows: list[dict]) -> list[dict]:
    fields = list(TOOLTIP_FIELDS) + (["ncu hint"] if any("ncu hint" in r for r in rows) else [])
    return [{"field": f, "type": "nominal"} for f in fields]


# ---------------------------------------------------------------- roofline


def roofline_spec(results: Sequence[Result], ceilings: dict | None, title: str) -> dict | None:
    """The family's points under the measured roofs, or None when nothing can be placed
    (no ceilings, or no point with a FLOP count: intensity 0 has no place on a log axis)."""
    if not ceilings or not ceilings.get("bandwidth_gbps"):
        return None
    rows = [point_row(r) for r in measured(results)]
    rows = [r for r in rows if r["intensity"] and r["tflops"]]
    if not rows:
        return None
    names = sorted({r["roof of"] for r in rows})
    roofs = roof_lines(ceilings, names, [r["intensity"] for r in rows])
    return {
        "title": title, "width": WIDTH, "height": HEIGHT,
        "layer": [
            {"data": {"values": roofs},
             "mark": {"type": "line", "strokeDash": [6, 3], "opacity": 0.7},
             "encoding": {
                 "x": {"field": "intensity", "type": "quantitative", "scale": {"type": "log"},
                       "title": "arithmetic intensity (FLOP/byte)"},
                 "y": {"field": "tflops", "type": "quantitative", "scale": {"type": "log"},
                       "title": "TFLOP/s"},
                 "detail": {"field": "roof", "type": "nominal"},
                 "color": {"value": "#888"},
                 "tooltip": [{"field": "roof", "type": "nominal"}]}},
            *(_roof_label(roofs, name, i) for i, name in enumerate(names)),
            {"data": {"values": rows},
             "mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {
                 "x": {"field": "intensity", "type": "quantitative"},
                 "y": {"field": "tflops", "type": "quantitative"},
                 "color": variant_color(results),
                 "shape": {"field": "dtype", "type": "nominal"},
                 "tooltip": _tooltip(rows)}},
        ],
    }


def _roof_label(roofs: list[dict], name: str, index: int) -> dict:
    """A precision's peak written above its roof's right end; one label layer per roof, each
    a line higher, so near-equal peaks (fp16 656, bf16 675 TFLOP/s) do not overprint."""
    return {"data": {"values": [r for r in roofs if r["label"] and r["precision"] == name]},
            "mark": {"type": "text", "align": "right", "dy": -6 - 12 * index,
                     "color": "#666", "fontSize": 10},
            "encoding": {"x": {"field": "intensity", "type": "quantitative"},
                         "y": {"field": "tflops", "type": "quantitative"},
                         "text": {"field": "label"}}}


def roof_lines(ceilings: dict, names: Sequence[str], intensities: Sequence[float]) -> list[dict]:
    """Each compute precision's roof (timing/precision.py: the dtypes' own and any a variant
    declared, such as tf32), min(bandwidth x intensity, peak), as three vertices: the left
    edge, the ridge point and the right edge (straight segments on log-log axes)."""
    bandwidth_tflops = ceilings["bandwidth_gbps"] * 1e9 / 1e12  # TFLOP/s per FLOP/byte
    peaks = {name: precision.peak_tflops(ceilings, name) for name in names}
    ridges = [p / bandwidth_tflops for p in peaks.values() if p]
    # From left of the lowest ridge: the memory slope shows even for compute-bound points.
    left = min([*intensities, *ridges]) / X_MARGIN
    right = max([*intensities, *ridges]) * X_MARGIN
    lines = []
    for name, peak in peaks.items():
        title = (f"{name} roof: {fmt.rate(ceilings['bandwidth_gbps'])} GB/s, "
                 f"{fmt.rate(peak)} TFLOP/s" if peak else
                 f"memory roof: {fmt.rate(ceilings['bandwidth_gbps'])} GB/s")
        ridge = peak / bandwidth_tflops if peak else right
        xs = [left, min(max(ridge, left), right), right]
        for i, x in enumerate(xs):
            lines.append({"roof": title, "precision": name, "intensity": x,
                          "tflops": min(bandwidth_tflops * x, peak or math.inf),
                          "label": f"{name} {fmt.rate(peak)} TFLOP/s"
                          if peak and i == len(xs) - 1 else ""})
    return lines


# ---------------------------------------------------------------- sweeps


def sweeps(results: Sequence[Result]) -> list[dict]:
    """The sweeps a family ran: for each (dtype, mode) and each setting of the other
    axes, the axis that varies most, when it took at least two values. Axes that move
    together (--sizes on matmul: M=N=K) make one sweep named 'M (=N=K)'."""
    groups: dict[tuple, list[Result]] = {}
    for r in measured(results):
        groups.setdefault((r.dtype, r.mode), []).append(r)
    found = []
    for (dtype, mode), group in groups.items():
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


def sweep_specs(sweep: dict, family: str, color: dict | None = None) -> list[dict]:
    """Two charts of one sweep: time, and the rate that sets the roof (GB/s for a
    memory-bound family, TFLOP/s otherwise), each with the CI as a band. `color`: the
    family's variant_color, so a variant keeps its colour from chart to chart."""
    color = color or variant_color(sweep["results"])
    rows = [point_row(r) for r in sweep["results"]]
    axis, name = sweep["axis"], _axis_title(sweep)
    values = [r[axis] for r in rows]
    log_x = max(values) / max(min(values), 1) >= 8  # sizes usually double: log spacing
    for row, result in zip(rows, sweep["results"], strict=True):
        row.update(_rate_band(result))
    rate = "GB/s" if _memory_bound(sweep["results"]) else "TFLOP/s"
    title = f"{family} {sweep['dtype']} {sweep['mode']}" + (
        f" ({sweep['fixed']})" if sweep["fixed"] else "")
    time_spec = _band_chart(rows, axis, name, log_x, "median_us", "ci_low_us", "ci_high_us",
                            "time (us, log)", f"{title}: time", log_y=True, color=color)
    key = "tflops" if rate == "TFLOP/s" else "gbps"
    rate_spec = _band_chart(rows, axis, name, log_x, key, f"{key}_low", f"{key}_high", rate,
                            f"{title}: {rate}", log_y=False, color=color)
    return [time_spec, rate_spec]


def _axis_title(sweep: dict) -> str:
    companions = sweep["companions"]
    return sweep["axis"] + (f" (={'='.join(companions)})" if companions else "")


def _memory_bound(results: Sequence[Result]) -> bool:
    bounds = [r.roof["bound"] for r in results if r.roof]
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


def _band_chart(rows: list[dict], axis: str, axis_title: str, log_x: bool, y: str, low: str,
                high: str, y_title: str, title: str, log_y: bool, color: dict) -> dict:
    values = sorted({row[axis] for row in rows})
    # Ticks at the measured values, named as the tables name them (2^20, not 1,048,576).
    names = ", ".join(f"'{v}': '{format_size(v)}'" for v in values)
    x = {"field": axis, "type": "quantitative", "title": axis_title,
         "scale": {"type": "log", "base": 2} if log_x else {"zero": False},
         "axis": {"values": values, "labelExpr": f"({{{names}}})[datum.value] || datum.label"}}
    y_scale = {"type": "log"} if log_y else {"zero": True}
    return {
        "title": title, "width": WIDTH // 2 + 60,
        "height": HEIGHT - 80, "data": {"values": rows},
        "encoding": {"x": x},
        # The band's colour has no legend: with legends merged, Vega-Lite then drops the
        # lines' one too, so each layer keeps its own (one shared colour scale still).
        "resolve": {"legend": {"color": "independent"}},
        "layer": [
            {"mark": {"type": "errorband", "opacity": 0.25},
             "encoding": {"y": {"field": low, "type": "quantitative", "title": y_title,
                                "scale": y_scale},
                          "y2": {"field": high}, "color": {**color, "legend": None}}},
            {"mark": {"type": "line", "point": True},
             "encoding": {"y": {"field": y, "type": "quantitative", "title": y_title,
                                "scale": y_scale},
                          "color": color, "tooltip": _tooltip(rows)}},
        ],
    }


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
    return {
        "title": title, "width": WIDTH,
        "height": {"step": 16}, "data": {"values": rows},
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
    }


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
    return {
        "title": title, "width": WIDTH, "height": {"step": 16}, "data": {"values": rows},
        "mark": {"type": "bar"},
        "encoding": {
            "y": {"field": "kernel", "type": "nominal", "sort": None, "title": None},
            "x": {"field": "total_ms", "type": "quantitative", "title": "total time (ms)"},
            "color": {"field": "origin", "type": "nominal"},
            "tooltip": [{"field": f, "type": "nominal"}
                        for f in ("name", "origin", "calls", "total_ms", "share")]},
    }

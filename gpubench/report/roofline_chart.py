"""The roofline chart: log-log, x = arithmetic intensity (FLOP/byte of the family's cost
model), y = achieved TFLOP/s, every placed point under the measured roofs. Pure.

Each roof is min(bandwidth x intensity, peak) of one precision `gpubench peak` measured
(timing/precision.py). The precisions the points are under are drawn dark; the device's
other measured precisions light and dashed, so a reader sees what tensor cores (tf32, fp16,
fp8) would allow. The axes are fixed to whole decades around the points and every ridge,
and every roof runs from the left edge to the right one: a memory roof that stopped short
of the plot's edge read as "no memory limit there".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpubench import format as fmt
from gpubench.records.result import Result
from gpubench.report.chart_rows import measured, point_row, tooltip
from gpubench.report.chart_style import ROOFLINE_HEIGHT, VariantColors, finish
from gpubench.timing import precision

USED_ROOF, OTHER_ROOF = "#444444", "#b0b0b0"
# Labels of roofs whose peaks are within this factor of each other would overprint
# (fp16 656 and bf16 675 TFLOP/s): each is lifted one text line above the last.
CROWDED = 1.6
LINE_PX = 13  # a 10 px label and its leading


def roofline_spec(results: Sequence[Result], ceilings: dict | None, title: str,
                  colors: VariantColors | None = None) -> dict | None:
    """The family's points under the measured roofs, or None when nothing can be placed
    (no ceilings, or no point with a FLOP count: intensity 0 has no place on a log axis)."""
    if not ceilings or not ceilings.get("bandwidth_gbps"):
        return None
    rows = [point_row(r) for r in measured(results)]
    rows = [r for r in rows if r["intensity"] and r["tflops"]]
    if not rows:
        return None
    colors = colors or VariantColors(results)
    used = sorted({r["roof of"] for r in rows})
    others = [name for name in precision.normalized_rates(ceilings.get("tflops"))
              if name not in used and precision.peak_tflops(ceilings, name)]
    x_domain = _x_domain(ceilings, [*used, *others], [r["intensity"] for r in rows])
    roofs = roof_lines(ceilings, used, x_domain)
    # The other roofs leave the used ones at the highest used ridge: drawn from there, not
    # along the shared memory slope, where a light dashed line would hatch the dark one.
    bandwidth = ceilings["bandwidth_gbps"] * 1e-3  # TFLOP/s per FLOP/byte
    ridges = [peak / bandwidth for name in used if (peak := precision.peak_tflops(ceilings, name))]
    start = min(max([*ridges, x_domain[0]]), x_domain[1])
    roofs += roof_lines(ceilings, others, [start, x_domain[1]])
    y_domain = _y_domain(roofs, [r["tflops"] for r in rows])
    return finish({
        "title": title, "width": "container", "height": ROOFLINE_HEIGHT,
        "encoding": {
            "x": {"field": "intensity", "type": "quantitative", "title":
                  "arithmetic intensity (FLOP/byte)",
                  "scale": {"type": "log", "domain": x_domain, "nice": False}},
            "y": {"field": "tflops", "type": "quantitative", "title": "TFLOP/s",
                  "scale": {"type": "log", "domain": y_domain, "nice": False}}},
        "layer": [
            _roof_layer([r for r in roofs if r["precision"] in used], USED_ROOF, []),
            _roof_layer([r for r in roofs if r["precision"] not in used], OTHER_ROOF, [5, 4]),
            *_roof_labels(roofs, used, x_domain),
            {"data": {"values": rows},
             "mark": {"type": "point", "filled": True, "size": 80, "opacity": 0.9},
             "encoding": {"color": colors.encoding(r["variant"] for r in rows),
                          "shape": {"field": "dtype", "type": "nominal"},
                          "tooltip": tooltip(rows)}},
        ],
    })


def _roof_layer(roofs: list[dict], color: str, dash: list[int]) -> dict:
    return {"data": {"values": roofs},
            "mark": {"type": "line", "clip": True, "color": color, "strokeDash": dash,
                     "strokeWidth": 1.6 if not dash else 1.2},
            "encoding": {"detail": {"field": "precision", "type": "nominal"},
                         "tooltip": [{"field": "roof", "type": "nominal"}]}}


def _roof_labels(roofs: list[dict], used: list[str], x_domain: list[float]) -> list[dict]:
    """Each peak named above its roof's right end, and the memory roof named at the left."""
    ends = sorted((r for r in roofs if r["label"]), key=lambda r: r["tflops"])
    lifted, previous, level = [], None, 0
    for end in ends:
        level = level + 1 if previous and end["tflops"] < previous * CROWDED else 0
        lifted.append({**end, "dy": -5 - LINE_PX * level,
                       "color": USED_ROOF if end["precision"] in used else OTHER_ROOF})
        previous = end["tflops"]
    layers = [{"data": {"values": [end]},
               "mark": {"type": "text", "align": "right", "dy": end["dy"],
                        "color": end["color"], "fontSize": 10},
               "encoding": {"text": {"field": "label"}}} for end in lifted]
    slope = [r for r in roofs if r["intensity"] == x_domain[0]][:1]
    if slope:
        layers.append({"data": {"values": [{**slope[0], "intensity": x_domain[0] * 1.15,
                                            "tflops": slope[0]["tflops"] * 1.15}]},
                       "mark": {"type": "text", "align": "left", "dy": -8,
                                "color": USED_ROOF, "fontSize": 10},
                       "encoding": {"text": {"field": "memory"}}})
    return layers


def roof_lines(ceilings: dict, names: Sequence[str], x_domain: Sequence[float]) -> list[dict]:
    """Each precision's roof, min(bandwidth x intensity, peak), as vertices at the left
    edge, the ridge point and the right edge (straight segments on log-log axes); a
    precision with no measured peak is the memory slope alone."""
    bandwidth = ceilings["bandwidth_gbps"] * 1e9 / 1e12  # TFLOP/s per FLOP/byte
    left, right = x_domain
    memory = f"memory {fmt.rate(ceilings['bandwidth_gbps'])} GB/s"
    lines = []
    for name in names:
        peak = precision.peak_tflops(ceilings, name)
        title = f"{name} roof: {memory}, {fmt.rate(peak)} TFLOP/s" if peak else memory
        xs = [left, min(max(peak / bandwidth, left), right), right] if peak else [left, right]
        for i, x in enumerate(xs):
            lines.append({"roof": title, "precision": name, "intensity": x,
                          "tflops": min(bandwidth * x, peak or math.inf), "memory": memory,
                          "label": f"{name} {fmt.rate(peak)} TFLOP/s"
                          if peak and i == len(xs) - 1 else ""})
    return lines


def _x_domain(ceilings: dict, names: Sequence[str], intensities: Sequence[float]) -> list[float]:
    """From a whole decade below the points and every ridge (the memory slope's label sits
    there) to a factor 2.5 past them."""
    bandwidth = ceilings["bandwidth_gbps"] * 1e-3
    ridges = [peak / bandwidth for name in names
              if (peak := precision.peak_tflops(ceilings, name))]
    values = [*intensities, *ridges]
    # Not a whole decade on the right: points at 1400 FLOP/byte put the edge at 10^4, a
    # decade of nothing; the right end is labelled by the peaks instead.
    return [_decade_below(min(values) / 2), max(values) * 2.5]


def _y_domain(roofs: list[dict], rates: Sequence[float]) -> list[float]:
    """From the lowest point or the memory roof's left end, to above the highest peak: a
    factor 1.6 (a fifth of a decade, ~20 px at this height) is room for the peaks' labels;
    not a whole decade up, which would spend a fifth of the plot on nothing."""
    low = min([*rates, *(r["tflops"] for r in roofs if r["intensity"] == roofs[0]["intensity"])])
    peaks = [r["tflops"] for r in roofs if math.isfinite(r["tflops"]) and r["label"]]
    return [_decade_below(low), max([*rates, *peaks]) * 1.6]


def _decade_below(value: float) -> float:
    return 10.0 ** math.floor(math.log10(value))


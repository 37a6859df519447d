"""How the report's charts look: one colour per variant for the whole page, the baseline
variant drawn black and thick, BASE/NEW runs told apart by their stroke, and labels never cut.

Why a palette indexed by sorted name over the whole report, not Vega's per-chart scale: Vega
gives colours in the order a chart meets its variants, so `triton` was orange in one family
and green in the next; a reader compares charts by colour. Sorted order over every variant
of every run on the page is collision-free up to the palette's length (a stable hash of the
name would collide: with 12 colours, 4 variants share one ~40% of the time). Pure data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpubench.records.result import Result

# Tableau's 10 without its grey (grey is the roofs' and SAME's colour) and black (the
# baseline's), then the lighter tints of the same hues: 13 variants before a colour repeats.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896")
BASELINE_COLOR = "#000000"
BASELINE_SUFFIX = " (base)"
# Lines of the baseline variant are this much wider: distinct even in a greyscale print.
LINE_WIDTH, BASELINE_LINE_WIDTH = 1.8, 3.2
# A/B overlays: BASE dashed (with its noise band), NEW solid.
BASE_DASH, NEW_DASH = [7, 4], [1, 0]
# Chart heights in pixels; widths follow the page ("container"), so charts use the window.
ROOFLINE_HEIGHT, SWEEP_HEIGHT = 360, 260
# Labels are never cut: Vega's defaults cut axis labels at 180 px and legend labels at
# 160 px, which turned 'softmax torch float32 rows=4096 cols=1000 cold' into 'cols=1...'.
LABEL_LIMIT = 1000
CONFIG = {"axis": {"labelLimit": LABEL_LIMIT, "titleLimit": LABEL_LIMIT},
          "legend": {"labelLimit": LABEL_LIMIT, "titleLimit": LABEL_LIMIT},
          "title": {"limit": 0, "anchor": "start", "fontSize": 13},
          "view": {"continuousHeight": SWEEP_HEIGHT}}


def variant_label(result: Result) -> str:
    """The name a chart gives a variant: the family's baseline carries '(base)'."""
    return result.variant + (BASELINE_SUFFIX if result.baseline else "")


class VariantColors:
    """Variant label -> colour, the same on every chart of one report."""

    def __init__(self, results: Iterable[Result]) -> None:
        names = sorted({r.variant for r in results if not r.baseline})
        self._of = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}

    def color(self, label: str) -> str:
        if label.endswith(BASELINE_SUFFIX):
            return BASELINE_COLOR
        return self._of.get(label, PALETTE[0])

    def encoding(self, labels: Iterable[str]) -> dict:
        """A colour channel over `labels` (the chart's variants), baseline first, each in
        its report-wide colour; the legend lists only this chart's variants."""
        domain = sorted(set(labels), key=lambda name: (not name.endswith(BASELINE_SUFFIX),
                                                       name))
        return {"field": "variant", "type": "nominal", "title": "variant",
                "scale": {"domain": domain, "range": [self.color(n) for n in domain]}}


def line_width() -> dict:
    """The baseline variant's line is thick; rows carry `is_base`."""
    return {"condition": {"test": "datum.is_base", "value": BASELINE_LINE_WIDTH},
            "value": LINE_WIDTH}


def run_dash(names: Sequence[str]) -> dict:
    """The stroke of BASE (dashed) and NEW (solid) in an overlay; rows carry `run`."""
    return {"field": "run", "type": "nominal", "title": "run",
            "scale": {"domain": list(names), "range": [BASE_DASH, NEW_DASH]},
            # A dash is only seen on a stroke: the default legend symbol is a dot.
            "legend": {"symbolType": "stroke", "symbolSize": 500, "encode": {"symbols": {
                "update": {"stroke": {"value": "#333"}, "strokeWidth": {"value": 2.5}}}}}}


def finish(spec: dict) -> dict:
    """A top-level spec with the page's look: full width, labels uncut."""
    return {**spec, "config": CONFIG}

"""Which rows `gpubench compare` shows under which heading, and which columns they need.

A kernel engineer reads a comparison the way the run table is laid out: one block per
family and dtype (a heading), the shape's named axes as the first columns, the axis
values written once per shape, one line per point, and only the columns some row fills
(one mode: named in the heading; no UNSURE or untrusted point: no `why`). Pure: points in,
headings and cell text out; compare_view.py draws them for the terminal and markdown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpubench import format as fmt
from gpubench.analysis.comparison import Comparison, PointComparison, RunComparison
from gpubench.parsing import format_size

# The columns after the axes, in order; compare_view.py says which are right-aligned.
# speed: BASE time / NEW time with its CI, as `vs base` reads (above 1: NEW is faster).
COLUMNS = ("variant", "mode", "base", "new", "change", "95% CI", "speed", "verdict", "why")
NUMERIC = frozenset({"base", "new", "change", "95% CI", "speed"})
# Ratios below this are shown as fmt.ratio shows them (an exponent, no CI): the Triton
# interpreter's 1e-4x crawl has no percent-level uncertainty worth printing.
TINY_RATIO = 0.01


@dataclass(frozen=True)
class CompareGroup:
    """The points of one family and dtype, in the order the runs hold them."""

    family: str
    dtype: str
    axes: tuple[str, ...]  # the shape's axis names, in the spec's order
    modes: tuple[str, ...]  # the modes its points were timed in
    points: tuple[PointComparison, ...]

    def heading(self) -> str:
        """'square float32 cold': the mode too when all its points share it."""
        mode = f" {self.modes[0]}" if len(self.modes) == 1 else ""
        return f"{self.family} {self.dtype}{mode}"

    def columns(self) -> tuple[str, ...]:
        """The axes, then every column some point of this group fills."""
        shown = [c for c in COLUMNS if c != "mode" or len(self.modes) > 1]
        if not any(_why(p) for p in self.points):
            shown.remove("why")
        return (*self.axes, *shown)

    def rows(self) -> list[dict[str, str]]:
        """A dict per point, by column; the axis values only on the first row of a shape."""
        rows, previous = [], None
        for point in self.points:
            shape = point.key.shape
            axes = {axis: format_size(shape[axis]) if shape != previous else ""
                    for axis in self.axes}
            rows.append({**axes, **point_cells(point)})
            previous = shape
        return rows


def compare_groups(result: RunComparison) -> list[CompareGroup]:
    """One group per (family, dtype), in the order they first appear; within a group the
    points of one shape together, shapes in the order they first appear."""
    grouped: dict[tuple[str, str], list[PointComparison]] = {}
    for point in result.points:
        grouped.setdefault((point.key.family, point.key.dtype), []).append(point)
    groups = []
    for (family, dtype), points in grouped.items():
        shapes = list(dict.fromkeys(p.key.shape for p in points))
        ordered = sorted(points, key=lambda p: shapes.index(p.key.shape))
        axes = tuple(dict.fromkeys(axis for p in ordered for axis in p.key.shape))
        modes = tuple(dict.fromkeys(p.key.mode for p in ordered))
        groups.append(CompareGroup(family, dtype, axes, modes, tuple(ordered)))
    return groups


def point_cells(point: PointComparison) -> dict[str, str]:
    """The cells of one point after its axes: '-' where there is no trusted time."""
    c = point.comparison
    cells = {"variant": point.key.variant, "mode": point.key.mode, "why": _why(point)}
    if c is None:  # no trusted time on one side: the verdict is SUSPECT, FAILED or '-'
        return {**cells, "base": "-", "new": "-", "change": "-", "95% CI": "-", "speed": "-",
                "verdict": point.verdict}
    return {**cells, "base": fmt.duration(c.base_median_s), "new": fmt.duration(c.new_median_s),
            "change": change_text(c), "95% CI": ci_text(c), "speed": speed_text(c),
            "verdict": c.verdict + ("*" if c.marked else "")}


def _why(point: PointComparison) -> str:
    return point.comparison.reason if point.comparison else point.note


def change_text(comparison: Comparison) -> str:
    """'+301%', '-3.5%', '+0.2%': NEW against BASE as a signed percentage."""
    return signed_percent(comparison.ratio - 1)


def ci_text(comparison: Comparison) -> str:
    """The CI as changes: '-0.1..+0.4%'; '-' when there was none."""
    if math.isnan(comparison.ci_low):
        return "-"
    low, high = signed_percent(comparison.ci_low - 1), signed_percent(comparison.ci_high - 1)
    return f"{low[:-1]}..{high}"


def signed_percent(fraction: float) -> str:
    """'+301%', '-3.5%': whole percents from 100% up, where a tenth says nothing."""
    digits = 0 if abs(fraction) >= 1 else 1
    return f"{fraction * 100:+.{digits}f}%"


def speed_text(comparison: Comparison) -> str:
    """NEW's speed against BASE's with its 95% CI, hyperfine's way: '0.25x±0.00'
    (BASE time / NEW time: above 1 NEW is faster, as the run table's `vs base`)."""
    if math.isnan(comparison.ci_low):
        return fmt.ratio(1 / comparison.ratio)
    return ratio_with_ci(1 / comparison.ratio, 1 / comparison.ci_high, 1 / comparison.ci_low)


def ratio_with_ci(ratio: float, low: float, high: float) -> str:
    """'1.86x±0.04': the ratio and the larger distance to its CI's ends (the bootstrap's
    interval is not symmetric; the larger side never overstates the certainty). Two
    decimals, as fmt.ratio and hyperfine: the percent-level change has its own column.
    An interval wider than the ratio itself is given by its ends, '0.57x [0.31, 12.88]'."""
    if not (math.isfinite(ratio) and math.isfinite(low) and math.isfinite(high)) \
            or ratio < TINY_RATIO:
        return fmt.ratio(ratio)
    half = max(ratio - low, high - ratio, 0.0)
    if half >= ratio:  # '0.57x±12.31' reads as a negative speedup: say the interval itself
        return f"{ratio:.2f}x [{low:.2f}, {high:.2f}]"
    return f"{ratio:.2f}x±{half:.2f}"

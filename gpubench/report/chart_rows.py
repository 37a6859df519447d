"""What a chart knows about a point (one row of its data), and which results a chart may
place at all. Pure.

Left off every chart: SUSPECT rows (a time not to be trusted) and correctness-only rows
(Triton kernels run by the interpreter on a machine without a GPU: their time is the
interpreter's, ~1e4x a kernel's, and on a log axis it stretched the roofline down to
1e-7 TFLOP/s). The page says how many of each were left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpubench import format as fmt
from gpubench.records.result import Result, correctness_only
from gpubench.report.chart_style import variant_label
from gpubench.timing import precision

TOOLTIP_FIELDS = ("variant", "shape", "dtype", "mode", "median", "TFLOP/s", "GB/s",
                  "of roof", "vs base")


def measured(results: Iterable[Result]) -> list[Result]:
    """The results a chart can place: passed, with a median, timed for real. SUSPECT rows
    are left out, not marked: their time is not to be trusted (0 ns, 40x the roof), and on
    a log axis it would stretch the chart and sit beside honest points as if it won."""
    return [r for r in results
            if r.passed and r.summary is not None and not correctness_only(r)]


def point_row(result: Result) -> dict:
    """What a chart knows about one measured point: the numbers and their text forms
    (the tooltip shows the text, the axes use the numbers)."""
    summary = result.summary
    roof = result.roof
    ncu = result.ncu or {}
    row = {
        "variant": variant_label(result), "is_base": bool(result.baseline),
        "dtype": result.dtype, "mode": result.mode, "shape": result.shape.label(),
        "median_s": summary.median, "ci_low_s": summary.ci_low, "ci_high_s": summary.ci_high,
        "median": fmt.duration(summary.median, min(summary.significant_digits, 4)),
        "tflops": result.tflops, "gbps": result.gbps,
        "TFLOP/s": fmt.rate(result.tflops), "GB/s": fmt.rate(result.gbps),
        "intensity": roof.intensity if roof else None,
        # The compute roof it is under: its variant's declared precision or its dtype's.
        "roof of": (roof.compute if roof else None) or precision.of_dtype(result.dtype),
        "of roof": (f"{fmt.percent(roof.fraction, 0)} "
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


def tooltip(rows: list[dict], extra: tuple[str, ...] = ()) -> list[dict]:
    fields = list(TOOLTIP_FIELDS) + list(extra) + (
        ["ncu hint"] if any("ncu hint" in r for r in rows) else [])
    return [{"field": f, "type": "nominal"} for f in fields]

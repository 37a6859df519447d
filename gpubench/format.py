"""Number formatting for tables: times with units, rates, ratios. Pure."""

from __future__ import annotations

import math


def significant(value: float, digits: int = 3) -> str:
    """`value` with `digits` significant digits, no exponent for table-sized numbers."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    return f"{value:.{decimals}f}"


def duration(seconds: float | None, digits: int = 3) -> str:
    """1.234e-5 -> '12.3 us': the unit that keeps 1-3 digits before the point."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{significant(seconds / scale, digits)} {unit}"
    return f"{significant(seconds / 1e-9, digits)} ns"


def rate(value: float | None, digits: int = 3) -> str:
    """Rates keep 3 significant digits; tiny ones (CPU interpreter runs) use an exponent."""
    if value is None:
        return "-"
    return f"{value:.1e}" if 0 < abs(value) < 0.01 else significant(value, digits)


def ratio(value: float | None) -> str:
    """Speedups: '1.00x', '0.35x', '2.3e-04x' for the Triton interpreter's crawl."""
    if value is None:
        return "-"
    return f"{value:.1e}x" if 0 < value < 0.01 else f"{value:.2f}x"


def percent(fraction: float | None, decimals: int = 1) -> str:
    if fraction is None or not math.isfinite(fraction):
        return "-"
    return f"{fraction * 100:.{decimals}f}%"

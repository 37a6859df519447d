"""Formatting for people: times with units, rates, ratios, compact kernel names. Pure."""

from __future__ import annotations

import math
import re


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


# ---------------------------------------------------------------- kernel names

# Names longer than this are shown compact: PyTorch's elementwise kernels spell out a
# 300-character lambda chain whose one telling word is the functor.
COMPACT_OVER = 48
# Identifiers inside template arguments that say what an elementwise/reduce kernel does.
_TELLING = re.compile(r"\b(\w+(?:_kernel\w*|Functor|_functor|Op))\b")
# ...but not these, which every PyTorch elementwise or reduce kernel carries.
_GENERIC = {"gpu_kernel_impl_nocast", "gpu_kernel_impl", "gpu_kernel", "ReduceOp",
            "func_wrapper_t", "unrolled_elementwise_kernel", "elementwise_kernel_helper"}


def compact_name(short: str) -> str:
    """'elementwise_kernel<masked_fill_kernel>' for PyTorch's long template names: the
    function and the first telling identifier of its template arguments; short names and
    plain identifiers (cuBLAS's) unchanged."""
    if len(short) <= COMPACT_OVER or "<" not in short:
        return short
    function = function_name(short)
    inner = short[short.index("<") + 1:]
    telling = [m for m in _TELLING.findall(inner) if m != function and m not in _GENERIC]
    return f"{function}<{telling[0]}>" if telling else function


def function_name(short: str) -> str:
    """'at::native::vectorized_elementwise_kernel<4, ...>' -> 'vectorized_elementwise_kernel'."""
    depth, cut = 0, len(short)
    for i, char in enumerate(short):
        if char == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif char == ">":
            depth -= 1
    return short[:cut].split("::")[-1].strip()

"""The flat record's columns (results.csv, DataFrames), declared once: the CSV header, the
names an axis may not take (it would overwrite one) and each value's reading of a Result
all come from this table. A flag's own columns come from its ExtraSpec (extras.py), in
the place EXTRAS_AT marks. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    read: Callable[[object], object]  # the Result's value for this column


def _summary(attribute: str, empty=None) -> Callable:
    return lambda r: getattr(r.summary, attribute) if r.summary else empty


def _roof(attribute: str) -> Callable:
    return lambda r: getattr(r.roof, attribute) if r.roof else None


def _clocks(attribute: str) -> Callable:
    return lambda r: getattr(r.clocks, attribute) if r.clocks else None


def _check(key: str) -> Callable:
    return lambda r: getattr(r.check, key) if r.check else None


def _work(attribute: str) -> Callable:
    return lambda r: getattr(r.device_work, attribute) if r.device_work else None


def _measured(attribute: str) -> Callable:
    return lambda r: getattr(r.measurement, attribute) if r.measurement else None


# After family, variant and the shape's axes (identity first: a DataFrame printed in a
# narrow terminal shows its first and last columns, and "which shape" is the first question).
COLUMNS: tuple[Column, ...] = (
    Column("dtype", lambda r: r.dtype), Column("mode", lambda r: r.mode),
    Column("status", lambda r: r.status), Column("median_s", _summary("median")),
    Column("shape", lambda r: r.shape.text()), Column("kind", lambda r: r.kind),
    Column("precision", lambda r: r.precision or None),
    Column("baseline", lambda r: r.baseline), Column("device", lambda r: r.device),
    Column("device_id", lambda r: r.device_id or None),
    Column("device_name", lambda r: r.device_name or None),
    Column("ci95_low_s", _summary("ci_low")), Column("ci95_high_s", _summary("ci_high")),
    Column("q1_s", _summary("q1")), Column("q3_s", _summary("q3")),
    Column("iqr_s", _summary("iqr")), Column("mean_s", _summary("mean")),
    Column("min_s", _summary("min")), Column("max_s", _summary("max")),
    Column("stdev_s", _summary("stdev")), Column("samples", _summary("n", 0)),
    Column("outliers", _summary("outliers")),
    Column("significant_digits", _summary("significant_digits")),
    Column("roof_fraction", _roof("fraction")), Column("bound", _roof("bound")),
    Column("intensity_flop_per_byte", _roof("intensity")),
    Column("flops", lambda r: r.flops), Column("bytes_moved", lambda r: r.bytes_moved),
    Column("method", lambda r: r.method), Column("stop_reason", lambda r: r.stop_reason),
    Column("warmup_s", _measured("warmup_s")), Column("sampling_s", _measured("sampling_s")),
    Column("sm_clock_min_mhz", _clocks("sm_mhz_min")),
    Column("sm_clock_max_mhz", _clocks("sm_mhz_max")),
    Column("throttled", _clocks("slowed_down")),
    Column("check_max_abs_err", _check("max_abs_err")),
    Column("check_mismatches", _check("mismatches")),
    Column("kernels_per_call", _work("kernels")),
    Column("other_ops_per_call", _work("other_ops")),
    Column("kernel_sum_s", lambda r: r.kernel_sum_s), Column("span_s", lambda r: r.span_s),
    # the flags' own columns go here (EXTRAS_AT)
    Column("warnings", lambda r: "; ".join(w.code for w in r.warnings) or None),
    Column("error", lambda r: r.error), Column("seed", lambda r: r.seed),
    # Short columns last, where a narrow print shows them: the speed and the rate.
    Column("compile_s", lambda r: r.compile_s),
    Column("compile_cached", lambda r: r.compile_cached),
    Column("tflops", lambda r: r.tflops), Column("gbps", lambda r: r.gbps),
    Column("speedup_vs_baseline", lambda r: r.speedup),
)
EXTRAS_AT = [c.name for c in COLUMNS].index("warnings")
IDENTITY = ("family", "variant")
# `size`: the name results.json once gave the one-axis shape; an axis called so would
# shadow it in older readers (a leaderboard problem's `size` becomes `size_`).
RESERVED = frozenset({*IDENTITY, "size", *(c.name for c in COLUMNS)})

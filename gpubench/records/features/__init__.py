"""The registry of extras: every feature's spec, in the order of its results.csv columns
(between span_s and warnings) and of its results.json keys. Adding a feature's column is
its own module here plus one line below."""

from __future__ import annotations

from gpubench.records.extras import ExtraSpec
from gpubench.records.features import (
    error_site,
    ncu_check,
    ncu_summary,
    sanitizer,
    tail_latency,
    vs_baseline,
)

EXTRAS: tuple[ExtraSpec, ...] = (
    ncu_summary.NCU,
    ncu_check.NCU_CHECK,
    sanitizer.SANITIZER,
    vs_baseline.VS_BASELINE,
    tail_latency.TAIL_LATENCY,
    error_site.ERROR_SITE,
)
SPECS = {spec.name: spec for spec in EXTRAS}

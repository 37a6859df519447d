"""KernelChange: why a point of an A/B moved, from both sides' Nsight Compute counters
(`gpubench ab --explain`, `gpubench bisect --explain`), as the A/B's record keeps it in
meta["ab"]["explain"]. Pure data; tools/ncu/change.py computes it, report/explain_view.py
shows it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpubench.codec import Record


@dataclass(frozen=True)
class CounterChange(Record):
    """One counter of the kernel, BASE against NEW, and its share of the duration change.

    `share_ns` is the part of NEW - BASE (ns) that the counter's own change accounts for
    (tools/ncu/change.py: the time identity); None for a counter outside it (bytes, hit
    rates), shown for context after the ranked ones. `via` names the factor a cause acts
    through (registers per thread -> achieved occupancy): it then carries that factor's
    share, not a share of its own. `within` names the factor a row is a part of (a stall
    reason of warp cycles per issued instruction): its share is a part of that factor's.
    """

    name: str
    unit: str
    base: float | None
    new: float | None
    share_ns: float | None = None
    via: str = ""
    within: str = ""

    @property
    def change(self) -> float | None:
        """NEW / BASE - 1, or None where a side is missing or BASE is 0."""
        if self.base is None or self.new is None or self.base == 0:
            return None
        return self.new / self.base - 1.0


@dataclass(frozen=True)
class KernelChange(Record):
    """One A/B point's explanation: the main kernel of each side, the counters ranked by
    their share of the duration change, and ncu's hints that came or went. `error` says
    why there is none (no ncu, a side that failed under it)."""

    variant: str
    dtype: str
    shape: str
    kernel: str = ""
    base_ns: float = math.nan  # ncu's gpu__time_duration of the main kernel, BASE
    new_ns: float = math.nan
    counters: tuple[CounterChange, ...] = ()
    hints_appeared: tuple[str, ...] = ()
    hints_gone: tuple[str, ...] = ()
    error: str = ""

    @property
    def delta_ns(self) -> float:
        return self.new_ns - self.base_ns


def explanations(meta: Mapping) -> tuple[KernelChange, ...]:
    """The explanations an A/B's record holds (meta["ab"]["explain"]); () for a run without
    --explain or written before it."""
    ab = meta.get("ab") if isinstance(meta, Mapping) else None
    found = ab.get("explain") if isinstance(ab, Mapping) else None
    return tuple(KernelChange.from_dict(c) for c in found or () if isinstance(c, Mapping))

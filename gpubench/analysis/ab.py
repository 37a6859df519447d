"""The verdicts of an A/B run: each point's pairs (timing/paired.py) -> a PairVerdict.

The semantics are `compare`'s (analysis/comparison.verdict): FASTER / SLOWER when the
whole interval lies beyond the bar, SAME when it lies within +-threshold, UNSURE otherwise,
with the reason. What differs is where the doubt comes from. Both versions ran in one
process, interleaved, so the between-run term `compare` must allow for (a fresh process
moving a point by ~1%) is not in the pairs; the pairs' own interval holds the rest.

What could still bias every pair alike (an order effect the random order did not cancel,
one version's extension loaded where the other's memory sits) shows in the controls: the
variants whose sources are the same in both versions. A control whose interval leaves out
1 has moved although nothing changed: that is the run's drift. It is reported, and a
change in the same group (dtype, shape, mode) must then exceed it as well: the bar is
(1 + threshold) x (1 + drift) - 1, as compare's two-variant group raises its bar.

A point whose sides did not both PASS has no verdict on time: FAILED (a side failed its
check, built wrong, crashed) or SUSPECT (a side's time is not trusted), the side named;
NOT RUN where neither side ran (ab was stopped first), as `run` names such points: a
point never tried says nothing about either version, so it is no regression either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from gpubench.analysis.comparison import FASTER, SAME, SLOWER, UNSURE, verdict
from gpubench.records.ab import PairVerdict
from gpubench.timing.paired import (
    BLOCK_MARGIN,
    DECIDED,
    EXTENDED,
    MIN_BLOCKS,
    PairedTiming,
    family_z,
)
from gpubench.timing.stats import quantile

FAILED, SUSPECT, NOT_RUN = "FAILED", "SUSPECT", "NOT RUN"
# The default threshold of `gpubench ab`: half of compare's 1%. In one process the
# run-to-run term is gone, and a 1% change must be told from "no change": SLOWER needs
# the whole interval above 1 + threshold, so the threshold sits below the changes worth
# finding (timing/paired.py; docs/measurement.md, "A/B in one process").
AB_THRESHOLD = 0.005
# What makes `ab --fail-on-regression` exit 13: a slower point, or one NEW no longer passes.
REGRESSIONS = (SLOWER, FAILED, SUSPECT)
# Points a gate's stderr line names before '...' (ab's and compare's): the table has them
# all, and a killed run can miss hundreds.
GATE_NAMED = 5


@dataclass(frozen=True)
class PairEntry:
    """One point and mode of an A/B run as the parent saw it: the pairs, or why a side has
    no trusted time (`status`: FAILED, SUSPECT or NOT_RUN, with `why`)."""

    variant: str
    dtype: str
    shape: str
    mode: str
    control: bool
    paired: PairedTiming | None = None
    status: str = ""
    why: str = ""
    # On a CPU whose other processes were busy meanwhile: how many times slower that can
    # have made the calls (timing/hostload.busy_factor), and why. 1.0: a quiet host.
    busy: float = 1.0
    busy_why: str = ""
    threshold: float | None = None  # this point's own (ab --threshold-from-aa); None: the run's

    @property
    def group(self) -> tuple[str, str, str]:
        return (self.dtype, self.shape, self.mode)


def judge_pairs(entries: Iterable[PairEntry], threshold: float = AB_THRESHOLD,
                decisions: int | None = None) -> list[PairVerdict]:
    """Every entry's verdict: controls first, at the bare threshold; then each changed
    variant against the bar its group's drift sets. Each interval is taken at the z that
    keeps a false FASTER/SLOWER among all `decisions` (default: the entries, controls
    included) under 5% (timing/paired.family_z): the worker stopped each point's rounds
    at the same z."""
    entries = list(entries)
    z = family_z(len(entries) if decisions is None else decisions)
    first = [_verdict(entry, threshold, 0.0, z) for entry in entries]
    drift = group_drift(first)
    return [v if v.control else _verdict(e, threshold, drift.get(e.group, 0.0), z)
            for e, v in zip(entries, first, strict=True)]


def group_drift(verdicts: Iterable[PairVerdict]) -> dict[tuple[str, str, str], float]:
    """Per group (dtype, shape, mode), the largest move of a control beyond its interval:
    the nearer end's distance from 1, as a fraction (a control at [1.003, 1.009]: 0.003)."""
    drift: dict[tuple[str, str, str], float] = {}
    for v in verdicts:
        if v.control and v.moved:
            moved = v.low - 1.0 if v.low > 1.0 else 1.0 / v.high - 1.0
            key = (v.dtype, v.shape, v.mode)
            drift[key] = max(drift.get(key, 0.0), moved)
    return drift


def drift_notes(verdicts: Iterable[PairVerdict]) -> list[str]:
    """One line per control that moved: what the run's drift was, and what it cost."""
    return [f"drift: control {v.variant} ({v.shape}, {v.dtype}, {v.mode}) moved "
            f"{_signed(v.change)} [{_signed(v.low - 1)}, {_signed(v.high - 1)}] although its "
            "sources are the same in both versions; a change in its group must exceed that"
            for v in verdicts if v.control and v.moved]


def regressions(verdicts: Iterable[PairVerdict]) -> list[PairVerdict]:
    return [v for v in verdicts if v.verdict in REGRESSIONS]


def timed_pairs(verdicts: Iterable[PairVerdict]) -> list[PairVerdict]:
    """The points whose two sides were both timed: at least one block of pairs, whatever
    the verdict (a point short of the blocks a ratio needs was still timed on both)."""
    return [v for v in verdicts if v.blocks > 0]


def gate_reasons(verdicts: list[PairVerdict]) -> list[str]:
    """Why --fail-on-regression exits 13, one line each; none: it passes. As `compare`'s
    gate: no point timed on both sides is not a pass (an A/B of nothing vouched for
    nothing: every variant skipped here, or every side failed)."""
    found = regressions(verdicts)
    if found:
        names = ", ".join(f"{v.variant} {v.shape} {v.dtype} {v.mode} ({v.verdict})"
                          for v in found[:GATE_NAMED])
        return [f"regression: {len(found)} A/B points: {names}"]
    if not timed_pairs(verdicts):
        return [f"no point timed on both sides ({len(verdicts)} points): nothing to gate on"]
    return []


def _verdict(entry: PairEntry, threshold: float, drift: float, z: float) -> PairVerdict:
    """With a point's own threshold (--threshold-from-aa), a change must clear that, what
    two identical sides can read apart there, and SAME lies within the larger of it and
    the run's threshold, the change not worth a verdict: a threshold below the A/B's own
    interval would otherwise leave an unchanged point UNSURE however long it ran."""
    own = entry.threshold
    band = threshold if own is None else max(own, threshold)
    threshold = threshold if own is None else own
    head = PairVerdict(entry.variant, entry.dtype, entry.shape, entry.mode, entry.control,
                       UNSURE, bar=threshold, z=z)
    if entry.status:
        return replace(head, verdict=entry.status, reason=entry.why)
    paired = entry.paired
    if paired is None:
        return replace(head, reason=entry.why or "no pairs were timed")
    bar = (1 + threshold) * (1 + drift) - 1
    ratio, low, high = paired.interval(z)
    head = replace(head, ratio=ratio, low=low, high=high, blocks=paired.blocks, bar=bar,
                   base_median_s=_median(paired.base_s), new_median_s=_median(paired.new_s),
                   stop=paired.stop)
    if math.isnan(low):
        block_s = 2 * (_median(paired.base_s) + _median(paired.new_s))
        more = (MIN_BLOCKS - paired.blocks) * block_s * BLOCK_MARGIN
        needs = "" if math.isnan(more) else f" (~{more:.1f} s more of pairs: --budget)"
        return replace(head, reason=f"{paired.blocks} blocks of four calls; a verdict needs "
                                    f"{MIN_BLOCKS}{needs}")
    said = verdict(low, high, band, bar)
    spread = uneven_load_spread(paired.ratios())
    if said in (FASTER, SLOWER) and entry.busy > 1 and abs(ratio - 1) <= spread:
        return replace(head, reason=f"host busy: {entry.busy_why}; the change is within "
                                    f"the pairs' own spread (+-{spread:.1%}), which load "
                                    f"that hits one side more than the other can make")
    return replace(head, verdict=said, reason=_why(said, low, high, threshold, band, bar,
                                                   paired))


def uneven_load_spread(ratios: list[float]) -> float:
    """How far load that the pairs do not cancel can move a busy host's verdict: half the
    interquartile range of the blocks' NEW/BASE ratios, as a fraction.

    The pairs cancel load that both sides share: within a block of four calls, a busy
    host slows BASE's and NEW's calls alike, whatever the load's size, so a 3x slowdown
    reads 3x beside two busy processes. What pairing does not cancel is load that lands
    on one side's calls more than the other's (a preemption inside one call): that moves
    single blocks, and so widens the blocks' spread. A change no larger than that spread
    could be such luck; a change beyond it shows in most blocks. A quiet host never gets
    this test: its spread is its own noise, which the interval already covers."""
    if len(ratios) < 4:
        return math.inf
    ordered = sorted(ratios)
    middle = quantile(ordered, 0.5)
    return (quantile(ordered, 0.75) - quantile(ordered, 0.25)) / 2 / middle


def _why(said: str, low: float, high: float, threshold: float, band: float, bar: float,
         paired: PairedTiming) -> str:
    """`threshold`: what a change had to clear; `band`: what SAME had to lie within."""
    if said in (FASTER, SLOWER, SAME):
        return "" if bar <= threshold * 1.000001 else \
            f"beyond the group's drift: the bar was {_signed(bar)}"
    spent = {DECIDED: "", EXTENDED: " after --max-time and its share of --budget"}.get(
        paired.stop, " after the whole --max-time")
    against = f"+-{band:.1%}" if band <= threshold * 1.000001 else \
        f"+-{threshold:.2%} (its A/A) for a change, +-{band:.1%} for SAME"
    if low < 1 + bar and high > 1 / (1 + bar) and (high - low) / 2 > band:
        return (f"the interval [{_signed(low - 1)}, {_signed(high - 1)}] is wider than "
                f"+-{band:.1%}{spent}: more --max-time narrows it")
    return (f"the change sits at the threshold: [{_signed(low - 1)}, {_signed(high - 1)}] "
            f"against {against}{spent}")


def _median(samples: tuple[float, ...]) -> float:
    return quantile(sorted(samples), 0.5) if samples else math.nan


def _signed(fraction: float) -> str:
    return f"{fraction:+.2%}"

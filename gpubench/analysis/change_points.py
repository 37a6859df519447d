"""Change points in a series of run medians: where a point's time stepped, by how much.

The method, in three parts, each a standard one from a well-kept library:

1. **Candidates: PELT** (ruptures.Pelt, Killick et al. 2012: the exact optimum of a
   penalised least-squares segmentation in linear time) on the log medians scaled by the
   series' own run-to-run noise. The noise is the MAD of successive differences / sqrt 2
   (a step moves one difference, not the MAD), so the penalty means the same on a 0.2%-
   noise H200 series and a 3%-noise CPU one. Penalty: PENALTY x log(n), BIC's form.
2. **Significance: Mann-Whitney U** (scipy) between the runs before and after each
   candidate, up to the neighbouring candidates: a rank test, as asv and Otava gate
   their candidates, so one wild run cannot make a change.
3. **Size: Hodges-Lehmann** ratio (the median of all after/before ratios) with its
   distribution-free 95% CI (Moses' order statistics of those ratios).

A candidate is kept when its test's p < ALPHA and its CI lies wholly beyond +-THRESHOLD
and twice the series' noise (a real but tiny step is no news, nor one a noisy host
makes). Candidates that fail go one at a time, the weakest first, and the others are
judged again on the merged segments (backward elimination): a GPU's run-to-run noise
comes in stretches (a few runs in a slower state, then back), and PELT cuts such a
stretch out as two candidates whose short middle segment passes a test against either
side alone; against the runs on both sides it does not. A step that lasts passes either
way. benchmarks/history_methods.py measured this choice against Binseg, an l1 cost and
no gate on H200 run-to-run noise (docs/measurement.md, "History").
Pure: numbers in, ChangePoints out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpubench.codec import Record

# Runs a segment needs on each side of a change. The rank test's smallest two-sided p is
# 2 / C(n1 + n2, n2): 3 runs after and 3 before reach only 0.1, 5 before reach 0.036, so a
# change 3 runs from the newest (the CPU acceptance's, at the 6th of 8) is the earliest
# one that can be called; PELT is kept from shorter segments, which no test could pass.
MIN_SEGMENT = 3
PENALTY = 3.0  # x log(n), on the noise-scaled series: see benchmarks/history_methods.py
ALPHA = 0.05  # the rank test's two-sided level


def fewest_before(after: int, alpha: float = ALPHA) -> int:
    """The fewest runs before a change, with `after` runs after it, whose rank test can
    reach p < alpha at all (every run after beyond every run before, none tied)."""
    before = MIN_SEGMENT
    while 2 / math.comb(before + after, after) >= alpha:
        before += 1
    return before


def fewest_runs(alpha: float = ALPHA) -> int:
    """The shortest series in which some change, MIN_SEGMENT runs or more on each side,
    can pass the rank test: the most even split gives the smallest p."""
    n = 2 * MIN_SEGMENT
    while 2 / math.comb(n, n // 2) >= alpha:
        n += 1
    return n


# The rule the guide, the README and `history` state, derived here so that none drifts
# from the test: 3 runs after a step and 5 before, 8 in all (4 and 4 is also 8). A shorter
# series is not searched: only tied medians (scipy's normal approximation) could pass
# there, and a step that 3 runs a side show with ties is no evidence either.
FEWEST_AFTER = MIN_SEGMENT
FEWEST_BEFORE = fewest_before(FEWEST_AFTER)
FEWEST_RUNS = fewest_runs()
RULE = (f"a change point needs {FEWEST_RUNS} timed runs or more: {FEWEST_AFTER} after the "
        f"step and {FEWEST_BEFORE} before at the fewest (a rank test calls no fewer)")
THRESHOLD = 0.01  # a change must be beyond +-1% with its whole CI: compare's default bar
Z95 = 1.959964  # the normal quantile of the Moses CI's order statistic
MIN_NOISE = 1e-4  # 0.01%: a series of identical medians still has a scale
# A change's CI must also clear twice the series' run-to-run noise: on a shared CPU (3%
# noise) a few runs in a faster state moved an unchanged torch.add by -3.4% [-5.9%, -2.1%],
# p = 0.03, 5 runs against 3; an H200's 0.15-1% noise leaves the 1% bar in charge.
NOISE_BAR = 2.0


@dataclass(frozen=True)
class ChangePoint(Record):
    """A step in a series: the first run after it (its index), and its size."""

    index: int  # the position in the series of the first run of the new level
    ratio: float  # after / before (Hodges-Lehmann): 1.04 is 4% slower
    low: float  # its 95% CI
    high: float
    p_value: float  # Mann-Whitney U, two-sided
    before: int  # runs in the segment before and after it that the test compared
    after: int

    @property
    def slower(self) -> bool:
        return self.ratio > 1


def change_points(medians: Sequence[float], threshold: float = THRESHOLD,
                  alpha: float = ALPHA, penalty: float = PENALTY,
                  search: Callable | None = None) -> list[ChangePoint]:
    """The change points of a series of medians in run order (all > 0), oldest first.
    `search(scaled logs, penalty) -> candidate indices` replaces PELT (the benchmark
    that chose PELT tries others through it)."""
    logs = [math.log(m) for m in medians]
    n = len(logs)
    if n < FEWEST_RUNS:
        return []
    noise = noise_scale(logs)
    candidates = (search or pelt)(scaled(logs, noise), penalty)
    bar = max(threshold, NOISE_BAR * noise)
    while True:  # backward elimination: the weakest failing candidate goes, its
        # neighbours' segments merge, and the rest are judged again on the longer runs
        bounds = [0, *candidates, n]
        judged = [_judge(index, logs[bounds[k - 1]:index], logs[index:bounds[k + 1]])
                  for k, index in enumerate(candidates, start=1)]
        failing = [(c.p_value, k) for k, c in enumerate(judged)
                   if not _passes(c, bar, alpha)]
        if not failing:
            return judged
        _, weakest = max(failing)
        candidates = candidates[:weakest] + candidates[weakest + 1:]


def _passes(change: ChangePoint, bar: float, alpha: float) -> bool:
    return change.p_value < alpha and (change.low > 1 + bar or change.high < 1 - bar)


def noise_scale(logs: Sequence[float]) -> float:
    """Run-to-run noise of a series (in log units, ~relative): 1.4826 x the MAD of
    successive differences / sqrt 2; a step moves one difference and not this."""
    diffs = sorted(abs(b - a) for a, b in itertools.pairwise(logs))
    if not diffs:
        return MIN_NOISE
    middle = len(diffs) // 2
    mad = diffs[middle] if len(diffs) % 2 else (diffs[middle - 1] + diffs[middle]) / 2
    return max(1.4826 * mad / math.sqrt(2), MIN_NOISE)


def scaled(logs: Sequence[float], scale: float | None = None) -> list[float]:
    """The log medians in units of the series' noise (`scale`, else noise_scale's), from
    its first run."""
    scale = scale or noise_scale(logs)
    return [(x - logs[0]) / scale for x in logs]


def pelt(signal: Sequence[float], penalty: float, model: str = "l2") -> list[int]:
    """PELT's change points of a noise-scaled series, penalty x log(n) each. The l2 cost
    (history's) by pelt_l2, ruptures' recursion on running sums; others by ruptures."""
    if model == "l2" and len(signal) >= 2 * MIN_SEGMENT:
        return pelt_l2(signal, penalty * math.log(len(signal)))
    import numpy as np
    import ruptures

    found = ruptures.Pelt(model=model, min_size=MIN_SEGMENT, jump=1).fit(
        np.asarray(signal).reshape(-1, 1)).predict(pen=penalty * math.log(len(signal)))
    return [int(b) for b in found if b < len(signal)]


def pelt_l2(signal: Sequence[float], pen: float, min_size: int = MIN_SEGMENT) -> list[int]:
    """ruptures.Pelt(model="l2", min_size, jump=1)'s breakpoints (before the end) at
    penalty `pen`: the same recursion, candidates and pruning, in the same order (ties go
    to the earliest start, as its min() does), with each segment's cost, the sum of
    squared deviations, from running sums, every admissible start of one end at once.
    ruptures took ~1 s a 200-run series (a numpy var per segment), which made `history`
    over 10^6 rows hours (issue 61); this takes a few ms. tests/test_history_scale.py
    holds the two to the same answers."""
    import numpy as np

    n = len(signal)
    values = np.asarray(signal, dtype=float)
    sums = np.concatenate(([0.0], np.cumsum(values)))
    squares = np.concatenate(([0.0], np.cumsum(values * values)))
    best = np.zeros(n + 1)  # the optimum of signal[:t]
    previous = np.zeros(n + 1, dtype=int)  # its last breakpoint
    admissible = np.zeros(0, dtype=int)
    for end in [*range(min_size, n), n]:
        start = end - min_size
        if start == 0 or start >= min_size:  # no partition of 0:t for 0 < t < min_size
            admissible = np.append(admissible, start)
        total = sums[end] - sums[admissible]
        cost = squares[end] - squares[admissible] - total * total / (end - admissible)
        totals = best[admissible] + (cost + pen)
        first = int(np.argmin(totals))  # the first of equal minima, as min() keeps
        best[end], previous[end] = totals[first], admissible[first]
        admissible = admissible[totals <= totals[first] + pen]
    found, end = [], int(previous[n])
    while end > 0:
        found.append(end)
        end = int(previous[end])
    return found[::-1]


def _judge(index: int, before: list[float], after: list[float]) -> ChangePoint:
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(after, before, alternative="two-sided").pvalue)
    ratio, low, high = hodges_lehmann(before, after)
    return ChangePoint(index, ratio, low, high, p, len(before), len(after))


def hodges_lehmann(before: Sequence[float], after: Sequence[float]
                   ) -> tuple[float, float, float]:
    """(ratio, low, high) of two runs of log medians: the median of all after - before
    differences,
    exponentiated, and Moses' 95% CI: the k-th smallest and largest differences, k from
    the U statistic's normal approximation, n1 n2 / 2 - z sqrt(n1 n2 (n1 + n2 + 1) / 12)
    (at least the first: with few runs the CI is the whole range)."""
    diffs = sorted(a - b for a in after for b in before)
    m, n1, n2 = len(diffs), len(before), len(after)
    middle = m // 2
    center = diffs[middle] if m % 2 else (diffs[middle - 1] + diffs[middle]) / 2
    k = int(m / 2 - Z95 * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
    k = min(max(k, 0), m - 1)
    return math.exp(center), math.exp(diffs[k]), math.exp(diffs[m - 1 - k])

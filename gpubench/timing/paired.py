"""Paired timing: two versions of a variant called in turn in one process, as pairs.

`gpubench ab` asks the question `compare` cannot settle for a 1% change: a fresh process
moves a 5 us kernel by about 1% (other pages, another clock ramp), as much as the change.
Here both versions run in one worker, with one timer, one flush, the same inputs, and
their calls interleaved: every pair is one call of each, in an order drawn at random, so
whatever drifts (clocks, temperature, the host's other work) lands on both calls of a pair
alike. The change is read from the pairs themselves:

- calls go in blocks of four, ABBA or BAAB (the order drawn per block): the second call of
  a pair may find the first one's caches, clocks or allocations warm, and a block holds
  one pair of each order, so that effect cancels inside every block, whatever it is;
- each block gives a ratio NEW / BASE, sqrt(new1 new2 / (base1 base2)); the estimate is
  the median of the blocks' ratios;
- its interval is the order-statistic interval of that median (distribution-free: the
  count of ratios below the true median is Binomial(n, 1/2)), at Z_SEQUENTIAL;
- sampling goes in rounds and stops at the first round whose interval decides the
  verdict (analysis/comparison.verdict's semantics), or when the time is spent.

Why blocks and not single pairs: with one order per pair, a 20% order effect makes the
ratios bimodal (1.2x and 1/1.2x), and the median of a mixture of 52% and 48% lands inside
one mode, far from the truth; in a block the two orders are averaged before the median.

Looking after every round is a sequential test: a 95% interval looked at 5-8 times
excludes a true ratio of 1 far more often than 5% of the time. Pocock's constant
boundary for 5-10 looks at an overall 5% is 2.41-2.56 standard errors; Z_SEQUENTIAL
(2.576, a 99% interval at every look) stays above it, so an unchanged variant is called
FASTER or SLOWER in under 5% of points even before the threshold's margin.

Pure: lists of floats in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from gpubench.codec import Record
from gpubench.timing.measurement import check_samples
from gpubench.timing.stats import median_ci_order, quantile

# The normal point of a two-sided 99% interval: above Pocock's boundary for up to ~10 looks.
Z_SEQUENTIAL = 2.5758293035489004
# Each point's share of the 1% that one point's looks may spend at Z_SEQUENTIAL.
POINT_ERROR = 0.01
BASE, NEW = 0, 1
# Why a paired measurement stopped: its interval decided a verdict, or the time ran out.
DECIDED, MAX_TIME = "decided", "max_time"
# Calls per block: BASE NEW NEW BASE, or NEW BASE BASE NEW.
BLOCK = 4
# A verdict needs this many blocks: the order-statistic interval of fewer than ~30 ratios
# at 99% spans nearly their whole range.
MIN_BLOCKS = 30


@dataclass(frozen=True)
class PairedTiming(Record):
    """One mode's blocks: base_s[2k], base_s[2k+1], new_s[2k] and new_s[2k+1] were the four
    calls of block k, in the order each version's calls ran."""

    mode: str
    base_s: tuple[float, ...] = ()
    new_s: tuple[float, ...] = ()
    new_first: int = 0  # blocks that began with NEW (about half: the order is drawn)
    rounds: int = 0
    stop: str = MAX_TIME

    def __post_init__(self) -> None:
        if len(self.base_s) != len(self.new_s) or len(self.base_s) % 2:
            raise ValueError(f"paired timing with {len(self.base_s)} base and "
                             f"{len(self.new_s)} new samples: a block holds two of each")
        object.__setattr__(self, "base_s", tuple(float(s) for s in self.base_s))
        object.__setattr__(self, "new_s", tuple(float(s) for s in self.new_s))

    @property
    def blocks(self) -> int:
        return len(self.base_s) // 2

    def ratios(self) -> list[float]:
        """NEW / BASE per block, the geometric mean of its two pairs (a block whose base
        took no time says nothing: left out)."""
        b, n = self.base_s, self.new_s
        return [math.sqrt(n[i] * n[i + 1] / (b[i] * b[i + 1]))
                for i in range(0, len(b), 2) if b[i] > 0 and b[i + 1] > 0]

    def interval(self, z: float = Z_SEQUENTIAL) -> tuple[float, float, float]:
        """(median ratio, low, high); nan for all three without MIN_BLOCKS ratios."""
        return paired_interval(self.ratios(), z)

    @classmethod
    def upgrade(cls, data: Mapping) -> Mapping:
        """Refuses samples that are no times (check_samples) before the codec reads them."""
        for name in ("base_s", "new_s"):
            check_samples(data.get(name, ()), name)
        return data


def family_z(decisions: int) -> float:
    """The z of every look of each of `decisions` paired verdicts decided together, so that
    the chance of any false FASTER or SLOWER among them stays under 5% (Bonferroni over
    the points, each with its own sequential boundary).

    One point's looks at Z_SEQUENTIAL (a two-sided 1% per look) keep its own false verdict
    under 5% over 5-10 looks (the module docstring); giving each of m points 1%/m per look
    keeps each under 5%/m, and so all of them together under 5%. One point: Z_SEQUENTIAL
    itself; 200 points: 4.06 (intervals ~1.6x as wide, which the pairs' time buys back as
    the square: ~2.5x the blocks). Bonferroni rather than Holm or Benjamini-Hochberg:
    the verdicts are intervals against a threshold, decided while sampling, and a
    simultaneous interval per point is what a sequential stop can use; Holm's step-down
    needs every point's final p-value first."""
    if decisions <= 1:
        return Z_SEQUENTIAL
    return NormalDist().inv_cdf(1 - POINT_ERROR / decisions / 2)


def paired_interval(ratios: Sequence[float], z: float = Z_SEQUENTIAL) -> tuple[float, float,
                                                                                   float]:
    """The median ratio and its order-statistic interval at `z` (nan without MIN_BLOCKS)."""
    if len(ratios) < MIN_BLOCKS:
        return math.nan, math.nan, math.nan
    ordered = sorted(ratios)
    low, high = median_ci_order(ordered, z)
    return quantile(ordered, 0.5), low, high


def blocks_of(order: Sequence[tuple[int, int]], samples: Sequence[float]
              ) -> tuple[list[float], list[float], int]:
    """(base samples, new samples, blocks that began with NEW) from a timer's samples.

    `order` holds (block index, side) for every call the timed calls made, warm-up
    included; a timer's samples are its last calls, one each, so they line up with the
    tail of `order`. A block counts when all four of its calls are among the samples."""
    if len(samples) > len(order):
        raise ValueError(f"{len(samples)} samples for {len(order)} calls")
    timed = order[len(order) - len(samples):]
    calls: dict[int, list[tuple[int, float]]] = {}
    for (block, side), sample in zip(timed, samples, strict=True):
        calls.setdefault(block, []).append((side, sample))
    base, new, new_first = [], [], 0
    for block in calls.values():
        if len(block) != BLOCK:
            continue
        base += [sample for side, sample in block if side == BASE]
        new += [sample for side, sample in block if side == NEW]
        new_first += block[0][0] == NEW
    return base, new, new_first


# Why a paired measurement stopped after its --max-time: it took more, up to its share of
# the suite's budget, to reach the blocks a verdict needs (time_for_blocks).
EXTENDED = "extended"
# A fifth more than the bare count: a round loses the blocks cut at its edges.
BLOCK_MARGIN = 1.2


def time_for_blocks(blocks: int, timed_s: float, allowance_s: float) -> float:
    """Seconds more of pairs a point needs to reach MIN_BLOCKS at the pace it timed so far,
    its calls' own duration (`timed_s`: the time its blocks' calls took); 0 when it has
    them, or when that is more than `allowance_s` (its share of the suite's budget). With
    no whole block yet, one block is taken to cost all the time timed: an upper bound."""
    if blocks >= MIN_BLOCKS or allowance_s <= 0:
        return 0.0
    pace = timed_s / blocks if blocks else max(timed_s, 1e-6)
    needed = (MIN_BLOCKS - blocks) * pace * BLOCK_MARGIN
    return needed if needed <= allowance_s else 0.0


def round_budgets(total_s: float, first_s: float) -> list[float]:
    """Seconds of blocks per round: doubling from `first_s` until `total_s` is spent, so a
    clear change stops after a few tens of ms while a close one gets the whole budget,
    in few looks (0.5 s from 50 ms: 4 rounds)."""
    budgets, spent, budget = [], 0.0, min(first_s, total_s)
    while spent < total_s - 1e-9:
        budget = min(budget, total_s - spent)
        budgets.append(budget)
        spent += budget
        budget *= 2
    return budgets

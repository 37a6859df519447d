"""The ratio of two runs' medians and its percentile-bootstrap interval (95%, or the
simultaneous level of a compare's points: family_level).

One method for every ratio gpubench shows with an uncertainty: `gpubench compare`'s
NEW/BASE (analysis/comparison.py) and the run table's `vs base`, baseline/variant
(verdicts/derive.py). Each side is resampled on its own: the two sample sets have
different counts and skewed, often multi-modal distributions, so no normal model fits
and the bootstrap needs none. Medians because gpubench reports medians, and outliers
move them least. Pure: numpy and the samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# 20,000 resamples: drawn through order statistics (_resampled_medians) they cost ~4 ms a
# ratio at 3,000 samples a side (10 ms at 50,000; the 2-core CPU machine), and the CI's
# ends move by under 0.05% between seeds (5 seeds of smooth samples; 0.1-0.2% at 2,000),
# so fewer verdicts near a bound turn on the seed. Samples quantised by the timer's
# resolution give medians on a few values, and an end can sit between two of them: the
# H200 square fixture's triton row ends at +2.72% or +3.40% by the seed, half and half,
# whatever the count (P(ratio <= +2.72%) = 0.9751 there). The run table uses this count too.
RESAMPLES = 20_000
# A fixed seed: the same two runs always get the same interval (and verdict).
SEED = 20261122
# The chance of any false FASTER or SLOWER over all the points one compare decides.
FAMILY_ERROR = 0.05
# A percentile interval's end is read among the resamples beyond it: at 99.975% (200
# points) 20,000 resamples leave 2.5 in each tail, and the ends moved by 0.006% between
# seeds (8 seeds, 3,000 smooth samples a side, a CI 0.22% wide); 50 a tail held them to
# 0.0013%, what 20,000 give at 95% (500 a tail) in relative terms.
TAIL_RESAMPLES = 50
# The cap: 0.25 us a resample on the 2-core CPU machine (two Beta draws of ~75 ns, a
# power and the percentiles), so 400,000 cost ~0.1 s a ratio (80-107 ms measured at 200,
# 3,000 and 50,000 samples a side; 20,000: 6-12 ms). It holds 50 a tail up to 200 points;
# a compare of m points draws ~2,000 m resamples each from 11 points on, m^2 x 0.5 ms in
# all: 40 points 0.8 s, 100 points 5 s, 200 points 20 s (1-2 s before), 1,000 points
# 100 s at the cap (10 a tail).
MAX_RESAMPLES = 400_000


def family_level(points: int) -> float:
    """The level of each of `points` intervals decided together, so that the chance of any
    false FASTER or SLOWER among them stays under FAMILY_ERROR (5%): Bonferroni, 1 - 5%/m.

    One point decided at 95% is wrong 1 time in 20, so a compare of 200 unchanged points
    called ~10 of them FASTER or SLOWER. Giving each of m points 5%/m keeps the sum, and so
    the chance of any, under 5%: m = 1: 95% (as before); 20: 99.75%; 200: 99.975% (a normal
    interval 3.66 / 1.96 = 1.87x as wide, which ~3.5x the samples buy back). Bonferroni
    rather than Holm or Benjamini-Hochberg: the verdicts are intervals against a threshold
    (beyond the bar: FASTER/SLOWER, within it: SAME), and the table shows each point's
    interval; a simultaneous interval per point is exactly that, while Holm's step-down and
    BH rank p-values (of a test against no change, not against a bar) and give no interval
    to show. It needs no independence between the points (a drift shared by two runs makes
    them dependent), as Sidak's 1 - 0.95^(1/m) would for an error per point only 1-3%
    larger. `gpubench ab` does the same (timing/paired.family_z)."""
    if points <= 1:
        return 1 - FAMILY_ERROR
    return 1 - FAMILY_ERROR / points


def resamples_for(level: float) -> int:
    """The bootstrap resamples that leave TAIL_RESAMPLES beyond each end of a `level`
    interval, never fewer than RESAMPLES nor more than MAX_RESAMPLES: 95% and 99% keep
    20,000, 99.75% (20 points) draws 40,000, 99.975% (200 points) 400,000."""
    # rounded first: 100 / (1 - 0.9975) is 40000.00000000085 in floating point
    wanted = math.ceil(round(2 * TAIL_RESAMPLES / (1 - level), 6))
    return min(MAX_RESAMPLES, max(RESAMPLES, wanted))


def ratio_ci(base: Sequence[float], new: Sequence[float], level: float = 0.95,
             resamples: int | None = None, seed: int = SEED) -> tuple[float, float, float]:
    """(ratio of medians NEW/BASE, CI low, CI high): the percentile bootstrap, each side
    resampled independently; `resamples`: resamples_for(level) unless given."""
    import numpy as np

    resamples = resamples or resamples_for(level)
    rng = np.random.default_rng(seed)
    base_a, new_a = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    ratio = float(np.median(new_a) / np.median(base_a))
    ratios = _resampled_medians(new_a, rng, resamples) / _resampled_medians(base_a, rng,
                                                                            resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    # The interval of a percentile bootstrap need not hold the point estimate when the
    # samples are few and tied; what is shown must never contradict the ratio beside it.
    return ratio, min(float(low), ratio), max(float(high), ratio)


def _resampled_medians(samples, rng, resamples: int):
    """Medians of `resamples` bootstrap resamples, drawn through their order statistics
    rather than by drawing n indices each: the same distribution at O(resamples) cost
    instead of O(resamples x n) (50,000 samples a side: ms instead of ~2 s a ratio).

    A resample is n indices floor(n U), U uniform on [0, 1); sorted, its k-th smallest
    value is the sorted samples' entry at floor(n U_(k)), U_(k) being the k-th smallest
    of n uniforms, which is Beta(k, n - k + 1). An odd n's median is the m-th value,
    m = (n + 1) / 2. An even n's median (numpy's) averages the m-th and (m+1)-th, m = n/2;
    given U_(m) = u, the other n - m uniforms lie above u, uniform on (u, 1), and the
    least of them is u + (1 - u) Beta(1, n - m)."""
    import numpy as np

    values = np.sort(np.asarray(samples, dtype=float))
    n = len(values)
    rank = (n + 1) // 2  # the (lower) middle value's rank, 1-based
    lower = rng.beta(rank, n - rank + 1, size=resamples)
    medians = _at(values, lower)
    if n % 2:
        return medians
    least_above = 1.0 - rng.random(resamples) ** (1.0 / (n - rank))  # Beta(1, n - m)
    return (medians + _at(values, lower + (1.0 - lower) * least_above)) / 2


def _at(values, uniforms):
    """values[floor(n u)] for each u: the sorted samples at the drawn order statistics
    (a u that rounds to 1.0 in floating point takes the largest value)."""
    import numpy as np

    indices = np.minimum((uniforms * len(values)).astype(np.int64), len(values) - 1)
    return values[indices]

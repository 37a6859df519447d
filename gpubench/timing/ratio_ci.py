"""The ratio of two runs' medians and its 95% percentile-bootstrap interval.

One method for every ratio gpubench shows with an uncertainty: `gpubench compare`'s
NEW/BASE (analysis/comparison.py) and the run table's `vs base`, baseline/variant
(verdicts/derive.py). Each side is resampled on its own: the two sample sets have
different counts and skewed, often multi-modal distributions, so no normal model fits
and the bootstrap needs none. Medians because gpubench reports medians, and outliers
move them least. Pure: numpy and the samples.
"""

from __future__ import annotations

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


def ratio_ci(base: Sequence[float], new: Sequence[float], level: float = 0.95,
             resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float, float]:
    """(ratio of medians NEW/BASE, CI low, CI high): the percentile bootstrap, each side
    resampled independently."""
    import numpy as np

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

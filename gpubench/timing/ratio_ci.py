"""The ratio of two runs' medians and its 95% percentile-bootstrap interval.

One method for every ratio gpubench shows with an uncertainty: `gpubench compare`'s
NEW/BASE (analysis/comparison.py) and the run table's `vs base`, baseline/variant
(records/derive.py). Each side is resampled on its own: the two sample sets have
different counts and skewed, often multi-modal distributions, so no normal model fits
and the bootstrap needs none. Medians because gpubench reports medians, and outliers
move them least. Pure: numpy and the samples.
"""

from __future__ import annotations

from collections.abc import Sequence

# 2000 resamples: the CI's ends move by under 0.1% between seeds (tests pin this).
RESAMPLES = 2000
# The run table's `vs base` CI is shown at two decimals and computed in the parent as each
# group completes: 1000 resamples halve the cost (about 0.1 s for 1000 samples a side on a
# 2-core VM) and move its ends by under 0.005 between seeds (H200 square fixtures), below
# the last digit shown.
TABLE_RESAMPLES = 1000
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


def _resampled_medians(samples, rng, resamples: int, chunk_values: int = 2_000_000):
    """Medians of `resamples` bootstrap resamples, drawn in chunks so that memory stays
    bounded: 2M draws x 8 bytes x 2 arrays = 32 MB at a time, whatever the sample count."""
    import numpy as np

    out = np.empty(resamples)
    rows_per_chunk = max(1, chunk_values // len(samples))
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        draws = rng.integers(0, len(samples), size=(rows, len(samples)))
        out[start:start + rows] = np.median(samples[draws], axis=1)
    return out

"""Summary statistics of timing samples. Pure Python: no numpy, no torch, no GPU.

Medians, not means: a timing distribution has a hard floor and a long right
tail (preemption, clock dips), and the median ignores the tail. The spread is
the interquartile range, which a few outliers do not inflate either.
Quantiles use linear interpolation between order statistics (numpy's default
'linear' method), so a test can compute them by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    mean: float
    min: float
    max: float
    stdev: float  # sample standard deviation (n - 1); 0 for a single sample

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        """IQR as a fraction of the median: the noise figure shown in tables."""
        return self.iqr / self.median if self.median else math.inf

    def to_dict(self) -> dict:
        return {**asdict(self), "iqr": self.iqr, "rel_iqr": self.rel_iqr}


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of already sorted values, interpolating linearly (numpy 'linear')."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def summarize(samples: Sequence[float]) -> Summary:
    """Summary of one measurement's samples (seconds, or any unit: it is kept)."""
    values = sorted(float(s) for s in samples)
    if not values:
        raise ValueError("no samples to summarize")
    n = len(values)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return Summary(
        n=n,
        median=quantile(values, 0.5),
        q1=quantile(values, 0.25),
        q3=quantile(values, 0.75),
        mean=mean,
        min=values[0],
        max=values[-1],
        stdev=math.sqrt(variance),
    )

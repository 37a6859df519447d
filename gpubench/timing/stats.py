"""Summary statistics of timing samples. Pure Python: no numpy, no torch, no GPU.

Medians, not means: a timing distribution has a hard floor and a long right
tail (preemption, clock dips), and the median ignores the tail. The spread is
the interquartile range, which a few outliers do not inflate either.
Quantiles use linear interpolation between order statistics (numpy's default
'linear' method), so a test can compute them by hand.

Two confidence intervals of the median:
- `median_ci_order`: distribution-free, from order statistics (the binomial
  argument: the median lies between two ranks n/2 -+ 1.96 sqrt(n)/2 with 95%
  probability). O(1) once sorted, so the stopping rule asks it after every batch.
- `bootstrap_median_ci`: the percentile bootstrap that results report,
  computed exactly rather than by random resampling, so the same samples
  always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpubench.codec import Record

# The two-sided 95% point of the normal distribution.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Summary(Record):
    DERIVED = ("iqr", "rel_iqr", "rel_ci", "significant_digits")

    n: int
    median: float
    q1: float
    q3: float
    mean: float
    min: float
    max: float
    stdev: float  # sample standard deviation (n - 1); 0 for a single sample
    ci_low: float = math.nan  # bootstrap 95% CI of the median
    ci_high: float = math.nan
    outliers: int = 0  # samples beyond Tukey's fences (1.5 IQR outside the quartiles)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_iqr(self) -> float:
        """IQR as a fraction of the median: the noise figure shown in tables."""
        return self.iqr / self.median if self.median else math.inf

    @property
    def rel_ci(self) -> float:
        """Half-width of the 95% CI of the median, as a fraction of the median."""
        if not self.median or math.isnan(self.ci_low):
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / self.median

    @property
    def significant_digits(self) -> int:
        """Digits of the median that its CI supports (2..6): +-0.5% -> 3, +-0.05% -> 4."""
        return significant_digits(self.median, (self.ci_high - self.ci_low) / 2)


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


def summarize(samples: Sequence[float], with_ci: bool = True) -> Summary:
    """Summary of one measurement's samples (seconds, or any unit: it is kept)."""
    values = sorted(float(s) for s in samples)
    if not values:
        raise ValueError("no samples to summarize")
    n = len(values)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    q1, q3 = quantile(values, 0.25), quantile(values, 0.75)
    low, high = bootstrap_median_ci(values) if with_ci else (math.nan, math.nan)
    return Summary(
        n=n,
        median=quantile(values, 0.5),
        q1=q1,
        q3=q3,
        mean=mean,
        min=values[0],
        max=values[-1],
        stdev=math.sqrt(variance),
        ci_low=low,
        ci_high=high,
        outliers=count_outliers(values, q1, q3),
    )


def count_outliers(values: Sequence[float], q1: float, q3: float) -> int:
    """Samples outside Tukey's fences [q1 - 1.5 IQR, q3 + 1.5 IQR]."""
    fence = 1.5 * (q3 - q1)
    return sum(1 for v in values if v < q1 - fence or v > q3 + fence)


def median_ci_order(sorted_values: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics (95% at the default z).

    The count of samples below the true median is Binomial(n, 1/2); its range
    n/2 -+ z sqrt(n)/2 gives the ranks that bound the median.
    Informative from n >= 6 at 95%; fewer samples give (min, max).
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no samples")
    half_width = z * math.sqrt(n) / 2
    low = max(math.floor(n / 2 - half_width), 0)
    high = min(math.ceil(n / 2 + half_width), n - 1)
    return sorted_values[low], sorted_values[high]


def bootstrap_median_ci(sorted_values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The percentile-bootstrap CI of the median, computed exactly instead of by resampling.

    A bootstrap resample's median is <= the j-th smallest sample exactly when at
    least m of its n draws are, m being the median's rank; each draw is, with
    probability j/n. So P(median* <= x_(j)) = P(Binomial(n, j/n) >= m), and the
    CI's ends are the first j where that reaches (1 -+ level) / 2. This is the
    limit of infinitely many resamples: deterministic, and far cheaper than
    drawing them (10,000 samples: tens of ms instead of ~0.5 s with numpy).
    """
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no samples")
    if n == 1:
        return sorted_values[0], sorted_values[0]
    rank = (n + 1) // 2  # the (lower) median's rank, 1-based
    tail = (1.0 - level) / 2

    def first_rank_reaching(probability: float) -> int:
        low, high = 1, n
        while low < high:
            middle = (low + high) // 2
            if _binomial_at_least(rank, n, middle / n) >= probability:
                high = middle
            else:
                low = middle + 1
        return low

    return (sorted_values[first_rank_reaching(tail) - 1],
            sorted_values[first_rank_reaching(1.0 - tail) - 1])


def _binomial_at_least(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= k), summed in log space (stable for n in the tens of thousands)."""
    if p >= 1.0:
        return 1.0
    if p <= 0.0:
        return 0.0 if k > 0 else 1.0
    # Terms more than 40 standard deviations above the mean are below 1e-300: skip them.
    upper = min(n, math.ceil(n * p + 40 * math.sqrt(n * p * (1 - p)) + 1))
    if k > upper:
        return 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_n_fact = math.lgamma(n + 1)
    logs = [log_n_fact - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p
            + (n - i) * log_q for i in range(k, upper + 1)]
    peak = max(logs)
    return min(1.0, math.exp(peak) * math.fsum(math.exp(x - peak) for x in logs))


# The signed-rank test's normal approximation is within ~0.01 of the exact p from about
# 20 non-zero differences (Siegel & Castellan); below 10 it says nothing useful.
SIGNED_RANK_MIN_N = 10


def signed_rank_p_greater(differences: Sequence[float]) -> float | None:
    """One-sided p of Wilcoxon's signed-rank test that paired `differences` lean positive
    (H0: symmetric about 0); None for fewer than SIGNED_RANK_MIN_N non-zero differences.

    Why this test: two runs' per-point deviations from a third are paired by point, and
    their spread is heavy-tailed (a few bimodal points move by 2x), so a sign-and-rank test
    is the one that neither ignores the sizes (sign test) nor lets the tail decide (t test).
    Zeros are dropped (Wilcoxon's rule); tied sizes get their mean rank, and the variance
    its tie correction; the statistic has a continuity correction of 1/2.
    """
    nonzero = [d for d in differences if d != 0]
    n = len(nonzero)
    if n < SIGNED_RANK_MIN_N:
        return None
    order = sorted(range(n), key=lambda i: abs(nonzero[i]))
    ranks = [0.0] * n
    tie_term = 0.0
    start = 0
    while start < n:
        end = start
        while end + 1 < n and abs(nonzero[order[end + 1]]) == abs(nonzero[order[start]]):
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        tied = end - start + 1
        tie_term += tied ** 3 - tied
        start = end + 1
    positive = sum(rank for rank, d in zip(ranks, nonzero, strict=True) if d > 0)
    mean = n * (n + 1) / 4
    variance = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48
    if variance <= 0:
        return None
    z = (positive - mean - 0.5) / math.sqrt(variance)
    return 0.5 * math.erfc(z / math.sqrt(2))


def significant_digits(value: float, uncertainty: float) -> int:
    """How many significant digits of `value` an uncertainty leaves standing (2..6)."""
    if not value or not math.isfinite(uncertainty):
        return 2
    if uncertainty <= 0:
        return 6
    digits = math.floor(math.log10(abs(value))) - math.floor(math.log10(uncertainty)) + 1
    return max(2, min(6, digits))

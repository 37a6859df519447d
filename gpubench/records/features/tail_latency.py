"""p95_s and p99_s: the 95th and 99th percentiles of a result's timed samples, the tail
latencies a service budget is written against (the median says what a call usually costs,
p95 what one in twenty costs at worst, p99 one in a hundred; with fewer than 100 samples
p99 is interpolated between the largest two, so read it beside `samples`). Computed from
the samples every result keeps, so they are columns of results.csv (and of results.json's
flat fields) for old runs too, with nothing to save."""

from gpubench.records.extras import Column, ExtraSpec
from gpubench.timing.stats import quantile


def percentile(share: float):
    """The reader of numpy's 'linear' `share` quantile of the samples, like the summary's
    q1 and q3; None for a result without samples."""
    def read(result) -> float | None:
        samples = result.samples_s
        return quantile(sorted(samples), share) if samples else None
    return read


p95 = percentile(0.95)
TAIL_LATENCY = ExtraSpec("tail_latency", saved=False,
                         columns=(Column("p95_s", p95), Column("p99_s", percentile(0.99))))

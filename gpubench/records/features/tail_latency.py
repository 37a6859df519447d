"""p95_s: the 95th percentile of a result's timed samples, the tail latency a service
budget is written against (the median says what a call usually costs, p95 what one in
twenty costs at worst). Computed from the samples every result keeps, so it is a column of
results.csv (and of results.json's flat fields) for old runs too, with nothing to save."""

from gpubench.records.extras import Column, ExtraSpec
from gpubench.timing.stats import quantile


def p95(result) -> float | None:
    """numpy's 'linear' 0.95 quantile of the samples, like the summary's q1 and q3."""
    samples = result.samples_s
    return quantile(sorted(samples), 0.95) if samples else None


TAIL_LATENCY = ExtraSpec("tail_latency", columns=(Column("p95_s", p95),), saved=False)

"""When to stop taking samples: the stopping rule, as pure logic.

Samples are taken until the 95% confidence interval of the median is narrow
enough (relative half-width <= target), but never before a minimum count and a
minimum time, and never past a maximum time. Why it stopped is part of the
result: 'converged' is a number to trust; 'max_time' says the noise did not
settle in the time allowed, and the CI in the result says by how much.
"""

from __future__ import annotations

from gpubench.timing.settings import TimingSettings
from gpubench.timing.stats import median_ci_order, quantile

__all__ = ["CONVERGED", "MAX_SAMPLES", "MAX_TIME", "TimingSettings", "next_batch_size",
           "relative_ci", "stop_reason"]

CONVERGED = "converged"
MAX_TIME = "max_time"
MAX_SAMPLES = "max_samples"


def stop_reason(samples: list[float], elapsed_s: float, settings: TimingSettings) -> str | None:
    """Why sampling stops now, or None to take another batch."""
    count = len(samples)
    if count >= settings.max_samples:
        return MAX_SAMPLES
    if count < settings.min_samples:
        return None
    if elapsed_s >= settings.max_time_s:
        return MAX_TIME
    if elapsed_s >= settings.min_time_s and relative_ci(samples) <= settings.target_rel_ci:
        return CONVERGED
    return None


def relative_ci(samples: list[float]) -> float:
    """Half-width of the order-statistic 95% CI of the median, relative to the median."""
    ordered = sorted(samples)
    median = quantile(ordered, 0.5)
    low, high = median_ci_order(ordered)
    return (high - low) / 2 / median if median > 0 else float("inf")


def next_batch_size(per_sample_s: float | None, taken: int, settings: TimingSettings,
                    batch_s: float = 0.02) -> int:
    """Samples to queue before the next check: ~20 ms worth, within the limits."""
    if per_sample_s is None:
        return settings.min_samples
    wanted = int(batch_s / max(per_sample_s, 1e-7))
    return max(1, min(wanted, settings.max_samples - taken, 1000))

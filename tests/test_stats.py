import math

import pytest

from gpubench.timing.stats import (
    bootstrap_median_ci,
    median_ci_order,
    quantile,
    signed_rank_p_greater,
    significant_digits,
    summarize,
)


def test_summary_matches_hand_computed_values():
    # sorted: 1 2 3 4 10; positions for q1/q3 at 1.0 and 3.0 -> 2 and 4
    s = summarize([4, 1, 10, 3, 2])
    assert (s.n, s.median, s.q1, s.q3, s.min, s.max) == (5, 3, 2, 4, 1, 10)
    assert s.mean == 4
    # deviations from 4: -3 -2 -1 0 6 -> squares sum to 50, over n - 1 = 4
    assert s.stdev == pytest.approx(math.sqrt(50 / 4))
    assert s.iqr == 2
    assert s.rel_iqr == pytest.approx(2 / 3)


def test_quantile_interpolates_linearly_like_numpy():
    values = [10.0, 20.0, 30.0, 40.0]
    # position = q * 3: 0.25 -> 0.75 -> 10 + 0.75 * 10
    assert quantile(values, 0.25) == 17.5
    assert quantile(values, 0.5) == 25.0
    assert quantile(values, 1.0) == 40.0


def test_single_sample_has_zero_spread():
    s = summarize([5e-6])
    assert (s.median, s.iqr, s.stdev) == (5e-6, 0.0, 0.0)


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        summarize([])


def test_order_statistic_ci_by_hand():
    values = [float(v) for v in range(1, 101)]
    # half width = 1.96 * sqrt(100) / 2 = 9.8 -> ranks floor(40.2)=40 and ceil(59.8)=60 (0-based)
    assert median_ci_order(values) == (41.0, 61.0)
    assert median_ci_order([3.0]) == (3.0, 3.0)


def test_exact_bootstrap_ci_matches_resampling():
    import numpy as np

    rng = np.random.default_rng(7)
    values = sorted(rng.lognormal(0, 0.1, size=301).tolist())
    low, high = bootstrap_median_ci(values)
    picks = rng.integers(0, len(values), size=(20000, len(values)))
    medians = np.median(np.asarray(values)[picks], axis=1)
    sim_low, sim_high = np.percentile(medians, [2.5, 97.5])
    # the exact interval and 20,000 resamples agree to within a rank or two
    rank = {v: i for i, v in enumerate(values)}
    nearest = lambda x: min(range(len(values)), key=lambda i: abs(values[i] - x))  # noqa: E731
    assert abs(rank[low] - nearest(sim_low)) <= 2
    assert abs(rank[high] - nearest(sim_high)) <= 2
    assert low < quantile(values, 0.5) < high


def test_summary_carries_ci_outliers_and_digits():
    s = summarize([1.0] * 20 + [1.01] * 20 + [5.0])
    assert s.outliers == 1
    assert s.ci_low <= s.median <= s.ci_high
    assert significant_digits(2.5e-6, 1e-8) == 3
    assert significant_digits(2.5e-6, 0.0) == 6
    assert significant_digits(1.0, 0.5) == 2


def _exact_signed_rank_p_greater(differences):
    """P(W+ >= observed) by enumerating every sign pattern (no ties, small n)."""
    import itertools

    ranked = sorted(differences, key=abs)
    observed = sum(rank for rank, d in enumerate(ranked, 1) if d > 0)
    n = len(ranked)
    hits = sum(1 for signs in itertools.product((0, 1), repeat=n)
               if sum(rank * s for rank, s in zip(range(1, n + 1), signs, strict=True)) >= observed)
    return hits / 2 ** n


@pytest.mark.parametrize("differences", [
    [0.3, -0.1, 0.5, 0.2, -0.4, 0.7, 0.9, -0.6, 1.1, 0.8, 1.2, -1.3, 1.4, 1.5],
    [-0.3, 0.1, -0.5, 0.2, -0.4, 0.7, -0.9, 0.6, -1.1, 0.8, 1.2, -1.3, 1.4, -1.5],
    [1.0 + i / 10 for i in range(12)],
])
def test_signed_rank_p_is_near_the_exact_p(differences):
    p = signed_rank_p_greater(differences)
    assert p == pytest.approx(_exact_signed_rank_p_greater(differences), abs=0.01)


def test_signed_rank_p_drops_zeros_and_needs_enough_differences():
    assert signed_rank_p_greater([0.0] * 50 + [0.1] * 9) is None
    assert signed_rank_p_greater([0.1, -0.1] * 10) == pytest.approx(0.5, abs=0.1)
    shifted = [i / 100 + 0.3 for i in range(-50, 51)]  # most of them positive
    assert signed_rank_p_greater(shifted) < 0.001
    assert signed_rank_p_greater([-d for d in shifted]) > 0.999

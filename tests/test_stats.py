import math

import pytest

from gpubench.stats import quantile, summarize


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

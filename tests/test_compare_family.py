"""`gpubench compare` decides all its points together (timing/ratio_ci.family_level):
each interval at 1 - 5%/m over the m points compared for speed, so that unchanged code
gets a false FASTER or SLOWER in at most 1 compare of 20, not in 1 point of 20.

The simulations are seeded: each count below is what those draws give, and the 95%
count beside it shows the test could fail (per-point 95% intervals call several of the
same unchanged points FASTER or SLOWER)."""

import math

import numpy as np
import pytest

from gpubench.analysis import comparison as C
from gpubench.analysis.repeats import runs_interval, t_quantile
from gpubench.records.point import PointKey
from gpubench.records.result import OK, Result
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.report.compare_view import HEADERS, caption, compare_markdown, level_percent
from gpubench.timing.measurement import Measurement
from gpubench.timing.ratio_ci import RESAMPLES, family_level, resamples_for

FALSE = (C.FASTER, C.SLOWER)


def result(n: int, samples) -> Result:
    """One point of its own group (its own shape): no other variant's drift to correct
    for, so the interval alone decides."""
    key = PointKey("demo", "v", "float32", Shape({"n": n}), "cold")
    return Result(key=key, kind="torch", status=OK, device="cuda",
                  measurement=Measurement("cold", "test", tuple(samples)))


def run_of(results, run_id: str) -> RunDocument:
    return RunDocument(meta={"run_id": run_id}, env={"gpu": "G"}, results=tuple(results))


def false_verdicts(comparisons) -> int:
    return sum(c.verdict in FALSE for c in comparisons)


# ---------------------------------------------------------------- the level


def test_the_family_level_is_bonferroni_over_the_points():
    assert family_level(1) == 0.95 and family_level(0) == 0.95
    assert family_level(200) == 1 - 0.05 / 200
    assert family_level(20) == pytest.approx(0.9975)


def test_the_resamples_leave_fifty_beyond_each_end_within_bounds():
    assert resamples_for(0.95) == RESAMPLES == resamples_for(family_level(10))
    assert resamples_for(family_level(20)) == 40_000  # 50 / 0.00125
    assert resamples_for(family_level(200)) == 400_000
    assert resamples_for(family_level(10_000)) == 400_000  # the cap


def test_the_t_quantile_follows_the_level():
    assert t_quantile(4) == 2.776 and t_quantile(None) == 1.96  # the table at 95%
    assert t_quantile(4, 0.99) == pytest.approx(4.604, abs=1e-3)
    assert t_quantile(None, 0.99) == pytest.approx(2.5758, abs=1e-4)
    wide, narrow = runs_interval([1.0, 1.1, 0.9], [2.0, 2.2, 1.8], level=0.99), \
        runs_interval([1.0, 1.1, 0.9], [2.0, 2.2, 1.8])
    ratio = math.log(wide.ratio)
    assert (math.log(wide.high) - ratio) / (math.log(narrow.high) - ratio) == \
        pytest.approx(4.604 / 2.776, rel=1e-3)


def test_level_shown_with_enough_digits():
    assert [level_percent(family_level(m)) for m in (1, 6, 20, 200)] == \
        ["95%", "99.17%", "99.75%", "99.975%"]


# ---------------------------------------------------------------- false alarms


def test_unchanged_points_from_one_distribution_get_no_false_verdict():
    """100 unchanged points, both sides' samples drawn from one skewed distribution,
    judged by the bootstrap against no bar at all (threshold 0, no allowance): each point
    at 95% on its own calls 9 of them FASTER or SLOWER; at the family level (99.95%),
    none."""
    rng = np.random.default_rng(7)
    sides = [(rng.lognormal(0, 0.05, 200) * 1e-5, rng.lognormal(0, 0.05, 200) * 1e-5)
             for _ in range(100)]

    def judged(level: float) -> list[C.Comparison]:
        return [C.compare_samples(base, new, 0.0, C.Allowances(), level)
                for base, new in sides]

    assert false_verdicts(judged(0.95)) >= 3  # what compare did before
    assert false_verdicts(judged(family_level(len(sides)))) <= 1


def test_unchanged_runs_with_repeats_get_no_false_verdict():
    """compare_runs itself, 3 runs a side of 200 unchanged points: each run moves each
    point by a process draw (5% lognormal; the H200's fresh processes moved short kernels
    by 0.3-9%: analysis/repeats.py), which only the t interval over the runs sees. At
    95% each (compare_runs' `level`), 5 points come out FASTER or SLOWER beyond the 1%
    threshold; at the family level over the 200 (99.975%, t = 12.3 at 4 df), none."""
    rng = np.random.default_rng(11)
    points, runs = 200, 6
    draws = rng.lognormal(0, 0.05, (runs, points))
    documents = [run_of([result(1024 + p, 1e-5 * draws[r, p] * rng.lognormal(0, 0.01, 50))
                         for p in range(points)], f"run{r}") for r in range(runs)]
    base, new = documents[:3], documents[3:]

    def compared(level: float | None) -> C.RunComparison:
        return C.compare_runs(base[0], new[0], base_repeats=base[1:], new_repeats=new[1:],
                              level=level)

    at_95, family = compared(0.95), compared(None)
    assert {p.comparison.runs for p in family.points} == {(3, 3)}
    assert family.level == family_level(points)
    assert false_verdicts(p.comparison for p in at_95.points) >= 3
    assert false_verdicts(p.comparison for p in family.points) <= 1


def test_a_real_change_among_fifty_points_is_still_slower():
    """One point 5% slower among 49 unchanged, one run a side, 200 samples of 1% spread:
    at 99.9% each its CI (+4.5..+5.4%) still lies beyond its bar (the samples' IQR, 1.6%),
    and no unchanged point is called FASTER or SLOWER."""
    rng = np.random.default_rng(3)

    def samples(median: float):
        return median * (1 + rng.normal(0, 0.01, 200))

    base = run_of([result(1024 + p, samples(1e-5)) for p in range(50)], "base")
    new = run_of([result(1024 + p, samples(1.05e-5 if p == 17 else 1e-5))
                  for p in range(50)], "new")
    compared = C.compare_runs(base, new)
    assert compared.level == pytest.approx(0.999)
    said = {p.key.shape["n"] - 1024: p.verdict for p in compared.points}
    assert said.pop(17) == C.SLOWER
    assert not [p for p, verdict in said.items() if verdict in FALSE]


# ---------------------------------------------------------------- the record and views


def test_the_level_is_written_and_a_record_without_it_loads_at_95():
    empty = C.RunComparison((), (), (), (), level=family_level(20))
    written = empty.to_dict()
    assert written["level"] == family_level(20)
    assert C.RunComparison.from_dict(written).level == family_level(20)
    del written["level"]  # a record from before the family level
    old = C.RunComparison.from_dict(written)
    assert old.level == 0.95 and old.threshold == C.DEFAULT_THRESHOLD


def test_the_views_say_the_level_and_why():
    rng = np.random.default_rng(5)
    base = run_of([result(1024 + p, 1e-5 * (1 + rng.normal(0, 0.01, 100)))
                   for p in range(20)], "base")
    new = run_of([result(1024 + p, 1e-5 * (1 + rng.normal(0, 0.01, 100)))
                  for p in range(20)], "new")
    compared = C.compare_runs(base, new)
    assert "CIs at 99.75% each: 5% family-wise over 20 points (Bonferroni" in \
        caption(compared)
    assert "95%" not in caption(compared)
    assert "CI" in HEADERS and "95% CI" not in HEADERS
    markdown = compare_markdown(compared, "a", "b")
    assert "| change | CI | speed |" in markdown
    assert markdown.rstrip().splitlines()[-1].startswith("`compare: 20 points: ")
    old = C.RunComparison(compared.points, (), (), ())  # 95% each, as before
    assert "CIs at 95% each" in caption(old) and "family-wise" not in caption(old)

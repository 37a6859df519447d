"""The suite line under `ab`'s and `compare`'s tables (issue 63): the geometric-mean change
over the decided points, its 95% CI from the points' own intervals, and the verdicts
counted (analysis/suite.py, report/compare_view.suite_line)."""

from __future__ import annotations

import math

import pytest

from conftest import FIXTURES
from gpubench.analysis.suite import SuitePoint, SuiteSummary, ab_summary, summarize
from gpubench.records.ab import PairVerdict
from gpubench.report.ab_view import ab_markdown
from gpubench.report.compare_view import suite_line
from gpubench.timing.paired import Z_SEQUENTIAL

RUNS = FIXTURES / "compare" / "h200-processes"


def pair(verdict: str, ratio: float, half: float = 0.002, variant: str = "v") -> PairVerdict:
    """An ab point NEW/BASE = ratio, its 99% interval +-half around it in log space."""
    return PairVerdict(variant, "float32", "n=1024", "cold", False, verdict, ratio=ratio,
                       low=ratio * math.exp(-half), high=ratio * math.exp(half), blocks=100)


def point(verdict: str, ratio: float, low: float = math.nan, high: float = math.nan,
          z: float = 1.96) -> SuitePoint:
    return SuitePoint(verdict, ratio, low, high, z)


def test_geometric_mean_over_the_decided_points_and_every_verdict_counted():
    summary = ab_summary([pair("SLOWER", 1.02), pair("FASTER", 0.98), pair("SAME", 1.0),
                          pair("UNSURE", 1.5), pair("FAILED", math.nan)])
    assert summary.decided == summary.with_ci == 3
    assert summary.ratio == pytest.approx((1.02 * 0.98 * 1.0) ** (1 / 3))
    assert summary.counts == {"FASTER": 1, "SLOWER": 1, "SAME": 1, "UNSURE": 1, "FAILED": 1}
    line = suite_line(summary)
    assert line.startswith("suite: -0.01% [") and "over 3 decided points (95% CI)" in line
    assert line.endswith("; 1 FASTER, 1 SLOWER, 1 SAME, 1 UNSURE, 1 FAILED")


def test_unsure_points_are_left_out_of_the_mean():
    with_unsure = ab_summary([pair("SAME", 1.001), pair("UNSURE", 3.0)])
    assert with_unsure.ratio == pytest.approx(1.001) and with_unsure.decided == 1


def test_all_same_points_the_mean_and_the_interval_from_each_points_own():
    ratios = (0.999, 1.0, 1.001, 1.002)
    summary = ab_summary([pair("SAME", r, half=0.003) for r in ratios])
    mean = sum(math.log(r) for r in ratios) / len(ratios)
    # each point's se: its 99% half-width over 2.576; the mean's: sqrt(4 se^2) / 4
    se = math.sqrt(4 * (0.003 / Z_SEQUENTIAL) ** 2) / 4
    assert math.log(summary.ratio) == pytest.approx(mean)
    assert math.log(summary.low) == pytest.approx(mean - 1.96 * se)
    assert math.log(summary.high) == pytest.approx(mean + 1.96 * se)
    assert suite_line(summary).endswith("; 0 FASTER, 0 SLOWER, 4 SAME, 0 UNSURE")


def test_a_single_point_is_its_own_mean_with_its_interval_at_95():
    summary = summarize([point("SLOWER", 1.05, 1.03, 1.07)])
    assert summary.ratio == pytest.approx(1.05) and summary.decided == 1
    assert summary.low == pytest.approx(1.05 * math.sqrt(1.03 / 1.07), rel=1e-3)
    assert "over 1 decided point (95% CI)" in suite_line(summary)


def test_no_decided_point_says_so():
    summary = summarize([point("UNSURE", 1.2, 0.9, 1.5), point("SUSPECT", math.nan),
                         point("-", math.nan)])
    assert math.isnan(summary.ratio) and summary.decided == 0
    assert suite_line(summary) == ("suite: no decided point; 0 FASTER, 0 SLOWER, 0 SAME, "
                                   "1 UNSURE, 1 SUSPECT, 1 not compared")
    assert suite_line(summarize([])).startswith("suite: no decided point; 0 FASTER")


def test_changes_symmetric_around_zero_give_a_ci_that_covers_it():
    summary = summarize([point("FASTER", 0.95, 0.93, 0.97), point("SLOWER", 1 / 0.95,
                                                                    1 / 0.97, 1 / 0.93),
                         point("SAME", 0.999, 0.995, 1.003), point("SAME", 1 / 0.999,
                                                                   1 / 1.003, 1 / 0.995)])
    assert summary.ratio == pytest.approx(1.0)
    assert summary.low < 1.0 < summary.high


def test_a_point_without_a_ci_counts_in_the_mean_but_not_in_the_interval():
    summary = summarize([point("SAME", 1.002, 1.0, 1.004), point("SAME", 1.004)])
    assert summary.decided == 2 and summary.with_ci == 1
    assert "95% CI over the 1 with one" in suite_line(summary)
    alone = summarize([point("SAME", 1.004)])
    assert "(none has a CI)" in suite_line(alone) and math.isnan(alone.low)


def test_the_summary_round_trips_through_the_record_codec():
    summary = ab_summary([pair("SAME", 1.001), pair("UNSURE", 1.1)])
    again = SuiteSummary.from_dict(summary.to_dict())
    assert again == summary
    assert SuiteSummary.from_dict({}).decided == 0  # a record without one still reads


def test_ab_markdown_gives_the_line_first():
    lines = ab_markdown([pair("SAME", 1.001), pair("SLOWER", 1.03)], "ab square").splitlines()
    assert lines[0] == "<!-- gpubench ab -->" and lines[3].startswith("`suite: ")
    assert lines[5] == "Changed (1):" and lines[7].startswith("| variant |")


def test_compare_of_two_recorded_runs_prints_the_line_under_the_tables(gpubench):
    shown = gpubench("compare", str(RUNS / "run1"), str(RUNS / "run2"))
    assert shown.code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[-2].startswith("suite: ") and "geometric mean over 3 decided points" in \
        lines[-2] and lines[-2].endswith("; 1 FASTER, 1 SLOWER, 1 SAME, 4 UNSURE")
    assert lines[-1].startswith("compare: ")  # the line a CI log greps stays last


def test_compare_markdown_gives_the_line_first(gpubench):
    shown = gpubench("compare", str(RUNS / "run1"), str(RUNS / "run2"), "--markdown", "-")
    assert shown.code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[2].startswith("`suite: ") and "3 decided points (95% CI)" in lines[2]

"""One rule for how many runs a change point needs, from change_points' constants: the
guide said 3 after the step and 5 before while `history` printed "6 or more" (the
segment minimum, at which the rank test cannot reach p < 0.05 on untied medians)."""

from __future__ import annotations

import math
from pathlib import Path

from gpubench.analysis import change_points as cp
from gpubench.analysis.history import build_series
from gpubench.records.series import HistoryRow
from gpubench.report.history_view import series_lines

ROOT = Path(__file__).resolve().parent.parent


def flat(path: str) -> str:
    return " ".join((ROOT / path).read_text().split())


def test_the_rule_is_the_rank_tests_own():
    """3 and 5 is the fewest that can pass; 3 and 4, or 3 and 3, cannot."""
    assert (cp.FEWEST_AFTER, cp.FEWEST_BEFORE, cp.FEWEST_RUNS) == (3, 5, 8)
    assert 2 / math.comb(8, 3) < cp.ALPHA <= 2 / math.comb(7, 3)
    steps = [1.0] * (cp.FEWEST_RUNS - cp.FEWEST_AFTER) + [2.0, 2.01, 1.99]
    assert cp.change_points(steps) and not cp.change_points(steps[1:])


def test_the_guide_the_readme_and_the_tool_say_it_alike():
    guide, readme = flat("docs/guide.md"), flat("README.md")
    assert (f"It needs {cp.FEWEST_RUNS} timed runs or more, at the fewest {cp.FEWEST_AFTER} "
            f"after the step and {cp.FEWEST_BEFORE} before") in guide
    assert f"change points ({cp.FEWEST_RUNS} runs or more)" in readme
    assert f"{cp.FEWEST_RUNS} timed runs or more: {cp.FEWEST_AFTER} after the step and " \
           f"{cp.FEWEST_BEFORE} before" in cp.RULE


def test_history_says_the_rule_under_a_short_series():
    def row(run: int) -> HistoryRow:
        return HistoryRow(f"/r/{run}", f"r{run}", float(run), "f", "v", "float32", "n=1",
                          "cold", "ok", 1e-5, 0.99e-5, 1.01e-5, "GPU", "events",
                          commit=f"{run:07d}" + "0" * 33)

    short = cp.FEWEST_RUNS - 1
    (series,) = build_series([row(i) for i in range(short)])
    assert series_lines(series, None)[-1] == f"  {short} timed runs: {cp.RULE}"
    (series,) = build_series([row(i) for i in range(cp.FEWEST_RUNS)])
    assert series_lines(series, None)[-1] == f"  no change point in {cp.FEWEST_RUNS} timed runs"


def test_a_host_clock_series_steps_only_beyond_ten_percent():
    """Unchanged code on the 2-core CI machine stepped -2.0% between CPU runs: a host-clock
    series' bar is 10% (history.HOST_CLOCK_THRESHOLD), a GPU series' 1%; four times the
    work is a change on both."""
    def rows(mode: str, after: float) -> list[HistoryRow]:
        return [HistoryRow(f"/r/{run}", f"r{run}", float(run), "f", "v", "float32", "n=1",
                           mode, "ok", 1e-5 * (after if run >= 6 else 1.0), 0.99e-5, 1.01e-5,
                           "GPU", "events", commit=f"{run:07d}" + "0" * 33)
                for run in range(12)]

    for factor, on_cpu in ((0.97, False), (4.0, True)):
        (cpu,) = build_series(rows("cpu", factor))
        (cold,) = build_series(rows("cold", factor))
        assert bool(cpu.changes) is on_cpu and bool(cold.changes), (factor, cpu, cold)

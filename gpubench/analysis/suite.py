"""The suite line: one change for a whole table of verdicts (`ab`, `compare`), so a user can
gate a suite on one figure and its interval rather than read 40 rows.

The change is the geometric mean of NEW/BASE over the DECIDED points (FASTER, SLOWER,
SAME): the mean of their log ratios. A geometric mean, because ratios multiply (2x slower
and 2x faster cancel) and a suite of 40 kernels is not dominated by its slowest one. UNSURE
points are left out: their interval was too wide or their run-to-run bound too large for a
verdict, and their estimate is what the table already declined to vouch for; SUSPECT,
FAILED, NOT RUN and "not compared" points have no trusted time at all.

Its interval is that of the mean of the points' TRUE changes, from each point's own
interval: a point's standard error in log space is its interval's half-width over the
interval's z, se_i = (log(high) - log(low)) / (2 z), and the mean's se = sqrt(sum se_i^2) / m.
This ASSUMES THE POINTS ARE INDEPENDENT: a drift that moved every point of a run alike (a
clock, another tenant) is shared, not independent, and makes the interval too narrow;
`compare`'s group allowances and `ab`'s controls are where such drift shows. It says how
well the measured points pin down their own mean change, not how the suite would move on
other kernels. z per input: `compare`'s intervals are at its points' simultaneous level
(timing/ratio_ci.family_level: 95% for one point, 99.975% for 200; the normal's z, or
Student's t over the runs' medians with repeats), `ab`'s are 99% at each sequential look
(timing/paired.py), so an ab point's half-width is over 2.576; the suite's own interval is
95%: it is one interval, of one mean, so no family of them to correct for. A decided point
without an interval (none is made today, but a record may lack one) counts in the mean and
the counts, not in the interval, and the summary says how many did. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from gpubench.analysis.comparison import FASTER, SAME, SLOWER, VERDICTS, RunComparison
from gpubench.analysis.repeats import Z_975, t_quantile
from gpubench.codec import Record
from gpubench.records.ab import PairVerdict

# The verdicts whose change the suite's mean takes (see the module docstring).
DECIDED = (FASTER, SLOWER, SAME)
# The suite's interval: 95%, the level a reader of `compare` already reads its CIs at.
SUITE_Z = Z_975


class SuitePoint(NamedTuple):
    """The shape both commands' verdicts are read into: a verdict, NEW/BASE and its
    interval (NaN where there is none), and the z that interval was made at."""

    verdict: str
    ratio: float
    low: float
    high: float
    z: float


@dataclass(frozen=True)
class SuiteSummary(Record):
    """The suite line's figures: NEW/BASE's geometric mean over the decided points and its
    95% interval (ratios; NaN where there is none), how many points each are, and the
    count of every verdict (the four speed verdicts always, others where any)."""

    ratio: float = math.nan
    low: float = math.nan
    high: float = math.nan
    decided: int = 0  # points in the mean
    with_ci: int = 0  # of those, the points in the interval
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def change(self) -> float:
        """The mean change as a signed fraction: +0.02 is 2% slower."""
        return self.ratio - 1.0


def summarize(points: Iterable[SuitePoint]) -> SuiteSummary:
    """The suite's geometric-mean change, its interval, and the verdicts counted."""
    points = list(points)
    counts = _counts(p.verdict for p in points)
    decided = [p for p in points if p.verdict in DECIDED and _positive(p.ratio)]
    if not decided:
        return SuiteSummary(counts=counts)
    mean = math.fsum(math.log(p.ratio) for p in decided) / len(decided)
    low, high, with_ci = _interval([p for p in decided if _has_ci(p)])
    return SuiteSummary(math.exp(mean), low, high, len(decided), with_ci, counts)


def ab_summary(verdicts: Iterable[PairVerdict]) -> SuiteSummary:
    """An A/B run's verdicts (analysis/ab.py), each interval made at its own z."""
    return summarize(SuitePoint(v.verdict, v.ratio, v.low, v.high, v.z)
                     for v in verdicts)


def compare_summary(result: RunComparison) -> SuiteSummary:
    """A comparison of two runs (analysis/comparison.py). A point without a comparison
    (SUSPECT, FAILED, not compared) is only counted, under its table's verdict."""
    return summarize(
        SuitePoint(p.verdict, c.ratio, c.ci_low, c.ci_high, _compare_z(c.runs, result.level))
        if (c := p.comparison) is not None else
        SuitePoint(p.verdict, math.nan, math.nan, math.nan, Z_975)
        for p in result.points)


def _compare_z(runs: tuple[int, int], level: float) -> float:
    """The z (or t) a comparison's interval was made at, at its `level`: the bootstrap's is
    normal-like (1.96 at 95%, 3.66 at 99.975%); with repeats it is Student's t over the
    runs' medians (analysis/repeats.py)."""
    return t_quantile(None if tuple(runs) == (1, 1) else sum(runs) - 2, level)


def _interval(points: list[SuitePoint]) -> tuple[float, float, int]:
    """The 95% interval (ratios) of the mean of these points' log changes, centred on their
    own mean, from their standard errors as if independent; NaN with none."""
    if not points:
        return math.nan, math.nan, 0
    mean = math.fsum(math.log(p.ratio) for p in points) / len(points)
    squares = math.fsum(((math.log(p.high) - math.log(p.low)) / (2 * p.z)) ** 2
                        for p in points)
    half = SUITE_Z * math.sqrt(squares) / len(points)
    return math.exp(mean - half), math.exp(mean + half), len(points)


def _counts(verdicts: Iterable[str]) -> dict[str, int]:
    """FASTER, SLOWER, SAME and UNSURE always (a log's grep never misses a 0), then the
    others in the order they first come."""
    counted = Counter(verdicts)
    order = [*VERDICTS, *(v for v in counted if v not in VERDICTS)]
    return {v: counted.get(v, 0) for v in order}


def _has_ci(point: SuitePoint) -> bool:
    return _positive(point.low) and _positive(point.high) and point.z > 0


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


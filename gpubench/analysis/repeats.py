"""Several runs a side: the between-run term measured instead of bounded.

Two runs of unchanged code land in two processes, and each process fixes a short kernel's
time a few percent apart from the next one's, the same for its whole measurement. On an
H200 (docs/measurement.md "Between processes"): 28 fresh processes of one run,
7 points of 3-90 us; within a process, 8 rounds of the same op over 20 s agreed within
0.2-0.4% and its 16 input sets within 0.4-2.7%, while the processes' medians spread by
0.3-9% (standard deviation), an op's own way in each process (one process had square +22%
and its matmuls +0%). Spreading the input sets over memory and cycling the output's block
changed nothing. Compared in pairs, those unchanged runs got FASTER or SLOWER on 15-19% of
their points: a bootstrap over one process's samples cannot see the process's draw.

Kalibera & Jones (*Rigorous benchmarking in reasonable time*, 2013): only repeated
executions measure it. With several runs of BASE's code and of NEW's, each run's median is
one draw of its process, and the interval is Student's t over them: the ratio of the two
sides' geometric means, its interval from the runs' pooled spread: 95%, or the level
compare decides its points at together (timing/ratio_ci.family_level). It holds the
within-run noise too (each run's median carries it), so it replaces the bootstrap, which
needs only the samples of one run a side. Pure arithmetic (scipy's t quantile beyond 95%).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from gpubench import safe_text
from gpubench.errors import UsageError
from gpubench.records.result import correctness_only

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom 1-30; the normal
# 1.96 beyond. With 2 runs a side (2 degrees of freedom) the interval is 4.3 standard
# errors wide each way: two runs a side say little, three a side (2.78) much more.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
Z_975 = 1.96


@dataclass(frozen=True)
class RunsInterval:
    """NEW / BASE over several runs a side: the ratio of the sides' geometric mean
    medians, its t interval (95%, or compare's simultaneous level), and how many runs
    each side had."""

    ratio: float
    low: float
    high: float
    runs: tuple[int, int]  # (BASE runs, NEW runs)
    base_median_s: float  # the geometric mean of BASE's run medians
    new_median_s: float


def t_975(freedom: int) -> float:
    """The two-sided 95% quantile of Student's t with `freedom` degrees of freedom."""
    return T_975[freedom - 1] if freedom <= len(T_975) else Z_975


def t_quantile(freedom: int | None, level: float = 0.95) -> float:
    """The two-sided `level` quantile of Student's t (its 1 - (1 - level) / 2 point) with
    `freedom` degrees of freedom; None: the normal's. At 95% the table above (t_975), so
    a comparison at one point reads as it always did; above it scipy's, where the tails
    matter most: at 99.975% (200 points) with 4 degrees of freedom (3 runs a side) t is 12.3,
    4.4x t_975, and the normal's 3.66 would be far too narrow."""
    if level == 0.95:
        return Z_975 if freedom is None else t_975(freedom)
    point = 1 - (1 - level) / 2
    if freedom is None:
        return NormalDist().inv_cdf(point)
    from scipy.special import stdtrit  # the t inverse without scipy.stats' import cost

    return float(stdtrit(freedom, point))


def runs_interval(base_medians: Sequence[float], new_medians: Sequence[float],
                  level: float = 0.95) -> RunsInterval | None:
    """The interval over the runs' medians at `level`, or None when they cannot give one: a
    side without a run, a median that is not positive, or one run a side (no spread to
    pool)."""
    base, new = list(base_medians), list(new_medians)
    if not base or not new or len(base) + len(new) < 3 or min(base + new) <= 0:
        return None
    base_logs, new_logs = [math.log(m) for m in base], [math.log(m) for m in new]
    base_mean, new_mean = statistics.fmean(base_logs), statistics.fmean(new_logs)
    freedom = len(base) + len(new) - 2
    squares = (sum((x - base_mean) ** 2 for x in base_logs)
               + sum((x - new_mean) ** 2 for x in new_logs))
    spread = math.sqrt(squares / freedom)
    half = t_quantile(freedom, level) * spread * math.sqrt(1 / len(base) + 1 / len(new))
    shift = new_mean - base_mean
    return RunsInterval(math.exp(shift), math.exp(shift - half), math.exp(shift + half),
                        (len(base), len(new)), math.exp(base_mean), math.exp(new_mean))


def run_medians(key, runs: Sequence[dict]) -> list[float]:
    """The median of `key` in each run (a RunDocument.by_key() map) where it passed and
    was timed for speed."""
    rows = [run.get(key) for run in runs]
    return [row.median_s for row in rows
            if row is not None and row.passed and row.median_s and not correctness_only(row)]


def check_sides(base_runs: Sequence, new_runs: Sequence) -> None:
    """UsageError when a run (a RunDocument) appears twice among one side's runs: the same
    run counted as two draws has no spread between them, so the t interval would shrink on
    nothing (BASE given again as its own repeat turned 2 false verdicts into 4 on the
    recorded H200 processes). Runs without an id are not matched."""
    for role, runs in (("BASE", base_runs), ("NEW", new_runs)):
        ids = [run.meta.get("run_id") for run in runs]
        twice = next((i for n, i in enumerate(ids) if i is not None and i in ids[:n]), None)
        if twice is not None:
            raise UsageError(f"run {safe_text.one_line(str(twice))} is given twice for "
                             f"{role}: a repeat must be another run of that side's code")

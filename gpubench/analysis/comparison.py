"""Is NEW faster than BASE, really? Two runs' raw samples -> a ratio, its CI and a verdict.

The question has two sources of doubt, and a verdict must survive both:

1. **Within a run**: the median of a few hundred noisy samples is itself uncertain. The
   ratio of medians NEW/BASE gets a percentile-bootstrap interval, each run's samples
   resampled on their own (the runs have different sample counts and skewed, often
   multi-modal distributions: no normal model fits, the bootstrap needs none). Medians
   because gpubench reports medians, and outliers move them least. Its level: 1 - 5%/m
   over a compare's m points, Bonferroni, 5% family-wise (ratio_ci.family_level).
2. **Between runs**: a second process on the same machine lands somewhere else — other
   physical pages, another clock ramp, other work on the host. The bootstrap cannot see
   this (it only knows one process per side), and it is large: on an H200, 5 us kernels
   of unchanged code moved by up to 4.8% between runs whose within-run CIs were +-0.5%
   (docs/measurement.md, "compare"); on a 2-core CPU one point moved 2x. Kalibera & Jones
   (2013) show that this between-execution variance can only be measured by repeating
   executions, so a pair of runs must bound it from what it holds:

   - **the point's own noise**: the interquartile range of its samples as a fraction of
     the median (the IQR column of gpubench's tables; the larger of the two runs).
     NVBench's compare likewise calls a difference within the samples' noise (their
     relative standard deviation) "same"; the IQR is its robust form, which the
     seconds-long stalls of a host clock do not blow up. On the H200, every between-run
     shift of unchanged code stayed within the larger of the 1% threshold and 0.41x this
     figure (18 points, 3-4 runs each: docs/measurement.md, "compare").
   - **the group's shift**: the other variants of the same family, dtype, shape and mode
     were measured in the same two processes. A shift all variants share is drift; a
     shift one variant has alone is its code. With three or more variants, a change must
     show both in the point's ratio and in its ratio over the group's median ratio
     (robust while fewer than half changed: on the CPU machine a whole run was 2.5x
     slower, one variant's doubled work still stood out). With two, the move both made in
     the same direction (the smaller of the two) raises the bar (which of two changed
     cannot be told).
   - **the clocks**: a throttled or power-capped point ran up to max_possible / min MHz
     slower for that reason alone.
   - **the host clock**: 150% on the CPU path, 75% in wall mode (HOST_CLOCK_ALLOWANCE).

   A change counts (FASTER/SLOWER) only when its whole CI lies beyond the group's shift
   and, on top of it, the largest of the user's threshold and the other bounds. From a
   CPU timing that timed the host's other work too (preempted, or other processes busy:
   see hostload.py) a change counts only beyond the larger of the bar and what that work
   can explain (hostload.busy_factor: a fair share of its core when few calls were
   preempted, nothing bounds it when the median call may have been); below, UNSURE.

Verdicts (threshold t, default 1%; bounds taken as ratios, so +-1% means 1.01 and
1/1.01, which keeps 2x slower and 2x faster symmetric):

    FASTER  the whole CI lies below 1 / (1 + bar)       1 + bar = (1 + 2-variant witness)
                                                          x (1 + max(t, noise, clocks, host))
            and, divided by the group's median ratio (3+ variants), still does
    SLOWER  the whole CI lies above 1 + bar
    SAME    the whole CI lies within [1 / (1 + t), 1 + t]
    UNSURE  otherwise, with the reason (too few samples, noisy, within the point's
            run-to-run noise, the whole group moved, throttled)

A point not PASS in both runs has no trusted time to compare: status_change.py says
whether it is a regression (PASS in BASE, SUSPECT or failed in NEW) or only listed.

asv uses a rank test plus a factor threshold (default 10%) for the same reason;
tritonbench's A/B runs both sides in one process, which removes the between-run
term but not the question of two commits. Pure: numpy and the samples, no GPU.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpubench.analysis.clock_bounds import clock_bound
from gpubench.analysis.config_change import config_change
from gpubench.analysis.environment import (  # noqa: F401 (ENV_KEYS re-exported)
    ENV_KEYS,
    environment_differences,
    repeat_differences,
)
from gpubench.analysis.repeats import RunsInterval, check_sides, run_medians, runs_interval
from gpubench.analysis.status_change import STATUS_VERDICTS, missing_in_new, status_change
from gpubench.codec import Record, saved_as
from gpubench.records.result import CORRECTNESS_ONLY, correctness_only
from gpubench.timing.hostload import busy_factor, busy_reason
from gpubench.timing.ratio_ci import RESAMPLES, SEED, family_level, ratio_ci  # noqa: F401 (re-exported)
from gpubench.timing.stats import quantile
from gpubench.verdicts.derive import same_model

FASTER, SLOWER, SAME, UNSURE = "FASTER", "SLOWER", "SAME", "UNSURE"
VERDICTS = (FASTER, SLOWER, SAME, UNSURE)
# What makes --fail-on-regression fail: a slower point, or one no longer trusted in NEW.
REGRESSION_VERDICTS = (SLOWER, *STATUS_VERDICTS)
# 1%: the run-to-run agreement of a quiet GPU on kernels of 20 us and more (5 cold
# medians within 1%, docs/measurement.md "compare"), above the +-0.5% CI gpubench aims at.
DEFAULT_THRESHOLD = 0.01
# With fewer samples the bootstrap of a median has only a handful of distinct values.
MIN_SAMPLES = 5
# Host-clock timings drift between runs by more than their samples show (frequency
# scaling, a busy SMT sibling, other tenants' memory traffic, where the allocator's pages
# landed, the launch path's caches), so a change must exceed the largest drift of unchanged
# code measured on quiet machines (docs/measurement.md, "compare"), per timing mode:
# - "cpu" (CPU tensors): on the 2-core CI machine one point of unchanged code moved by up to
#   1.95x between two runs (torch.sin of 2^18 floats, 198 us in one run and 379-387 us with
#   tight samples, no preemption, its group unmoved; seen in CI three times, with warmups of
#   20 ms, 100 ms and 1 s). 150% (2.5x) stands above it: a variant doing its work four
#   times still counts, twice the work does not: a 2-core VM's host clock cannot tell it
#   from the drift.
# - "wall" (what the caller waits for a GPU op, Python and launch included): on the H200,
#   torch.square's wall time moved 26% between two runs; 75% leaves room for a busier host,
#   and twice the work (+100%) still counts.
# Percent-level tuning belongs to the GPU-time modes.
HOST_CLOCK_ALLOWANCE = {"cpu": 1.5, "wall": 0.75}
# The group's move that host-clock verdicts are corrected for: a whole run drifting (25%
# faster in CI) hides a change, and taking the move out shows it. A smaller move is within
# what single points jitter on their own (in CI one variant of unchanged code can read
# 1.72x slower in a run whose group moves +5%, and the correction turns that into FASTER),
# so below this the measured change decides.
HOST_GROUP_DRIFT = 0.10


@dataclass(frozen=True)
class Allowances:
    """How far a point may move between two runs of unchanged code (fractions of 1)."""

    noise: float = 0.0  # the samples' IQR / median, the larger run
    group: float = 0.0  # two-variant group: the move both share in this one's direction
    drift: float = 1.0  # the group's median ratio: a change must show over it too
    clocks: float = 0.0  # slowdown the clocks alone explain
    host: float = 0.0  # the host clock's own drift (CPU path and wall mode)
    clock_note: str = ""  # 'power-capped in NEW (SM down to 1700 MHz)'
    # A reason little can be read from these runs: a CPU timing that timed the host's
    # other work too (hostload.py). A verdict then needs a change beyond `busy` (how many
    # times slower that work can have made a median: hostload.busy_factor), when that is
    # more than the bar; anything less is UNSURE.
    doubt: str = ""
    busy: float = 1.0

    def bar(self, threshold: float) -> float:
        """The change a FASTER/SLOWER needs: a two-variant group's common shift, and
        beyond it the largest of the threshold and the point's own bounds (ratios
        multiply: a shift of 2x and a point bound of 50% need 3x)."""
        own = max(threshold, self.noise, self.clocks, self.host)
        return (1 + self.group) * (1 + own) - 1

    def own(self) -> tuple[float, str]:
        """The largest of the point's own bounds (all but the group's), and its name."""
        return max((self.noise, "noise"), (self.clocks, "clocks"), (self.host, "host"))


@dataclass(frozen=True)
class Comparison(Record):
    """NEW against BASE for one point; written with the allowances that set its bar."""

    WRITTEN = ("base_median_s", "new_median_s", "ratio", "ci_low", "ci_high", "verdict",
               "reason", "bar", "*allowance_columns", "marked", "runs")

    base_median_s: float
    new_median_s: float
    ratio: float  # NEW / BASE: below 1 is faster
    # nan when there were too few samples
    ci_low: float = field(metadata=saved_as("ci95_low"))
    ci_high: float = field(metadata=saved_as("ci95_high"))
    verdict: str
    reason: str = ""
    bar: float = DEFAULT_THRESHOLD  # the change a FASTER/SLOWER needed
    allowances: Allowances = field(default_factory=Allowances)
    marked: bool = False  # the runs' environments differ: about machines, not only code
    runs: tuple[int, int] = (1, 1)  # runs of BASE and NEW behind it (analysis/repeats.py)

    @property
    def change(self) -> float:
        """NEW vs BASE as a signed fraction: +0.25 is 25% slower."""
        return self.ratio - 1.0

    def allowance_columns(self) -> dict:
        """The allowances a reader of `compare --json` weighs a verdict by, flat."""
        return {f"allowance_{name}": getattr(self.allowances, name)
                for name in _WRITTEN_ALLOWANCES}

    @classmethod
    def upgrade(cls, data: Mapping) -> dict:
        """The flat allowances gathered back into theirs."""
        return {**data, "allowances": {name: data[f"allowance_{name}"]
                                       for name in _WRITTEN_ALLOWANCES
                                       if f"allowance_{name}" in data}}

    def __repr__(self) -> str:
        ci = "" if math.isnan(self.ci_low) else f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        why = f" ({self.reason})" if self.reason else ""
        return f"<Comparison {self.ratio:.3f}{ci} {self.verdict}{'*' if self.marked else ''}{why}>"


# The allowances a comparison's file form holds, as allowance_<name>.
_WRITTEN_ALLOWANCES = ("noise", "group", "clocks")


# ---------------------------------------------------------------- statistics


def relative_iqr(samples: Sequence[float]) -> float:
    """(Q3 - Q1) / median, quantiles as stats.quantile computes them (numpy 'linear')."""
    ordered = sorted(samples)
    median = quantile(ordered, 0.5)
    if not median:
        return math.inf
    return (quantile(ordered, 0.75) - quantile(ordered, 0.25)) / median


# ---------------------------------------------------------------- the verdict


def verdict(ci_low: float, ci_high: float, threshold: float, bar: float) -> str:
    """What an interval supports: a change beyond `bar`, sameness within `threshold`."""
    if ci_high < 1 / (1 + bar):
        return FASTER
    if ci_low > 1 + bar:
        return SLOWER
    if 1 / (1 + threshold) <= ci_low and ci_high <= 1 + threshold:
        return SAME
    return UNSURE


def compare_samples(base: Sequence[float], new: Sequence[float],
                    threshold: float = DEFAULT_THRESHOLD,
                    allowances: Allowances | None = None, level: float = 0.95) -> Comparison:
    """NEW against BASE from two sample sets (seconds), what the runs allow, at `level`."""
    allowances = allowances or Allowances(noise=max(relative_iqr(base), relative_iqr(new)))
    base_median, new_median = quantile(sorted(base), 0.5), quantile(sorted(new), 0.5)
    if len(base) < MIN_SAMPLES or len(new) < MIN_SAMPLES:
        return Comparison(base_median, new_median, new_median / base_median, math.nan,
                          math.nan, UNSURE, f"too few samples ({len(base)} and {len(new)}; "
                          f"a verdict needs {MIN_SAMPLES} in each)", threshold, allowances)
    ratio, low, high = ratio_ci(base, new, level)
    return judge(base_median, new_median, (ratio, low, high), threshold, allowances)


def judge(base_median: float, new_median: float, interval: tuple[float, float, float],
          threshold: float, allowances: Allowances, runs: tuple[int, int] = (1, 1)) -> Comparison:
    """The verdict on a ratio and its interval (ratio, low, high), given the bounds."""
    ratio, low, high = interval
    bar = allowances.bar(threshold)
    said = verdict(low, high, threshold, bar)
    reason = "" if said != UNSURE else _why_unsure(low, high, threshold, allowances)
    said, reason = _over_the_group(said, reason, ratio, low, high, threshold, bar, allowances)
    if allowances.doubt:  # not even SAME: both runs may have timed the scheduler alike
        said, reason = _despite_the_host(low, high, threshold, bar, allowances)
    return Comparison(base_median, new_median, ratio, low, high, said, reason, bar, allowances,
                      runs=runs)


def _despite_the_host(low: float, high: float, threshold: float, bar: float,
                      allowances: Allowances) -> tuple[str, str]:
    """On a busy host: a change beyond what the host's other work explains, or UNSURE.
    The busy bound replaces the quiet host's bar when larger, not multiplies it: the host
    clock's allowance (HOST_CLOCK_ALLOWANCE) was itself set from runs on a loaded CI host,
    and a fair share of a core is already the most the other work can take."""
    wide = max(1 + bar, allowances.busy) - 1
    said = verdict(low, high, threshold, wide) if math.isfinite(wide) else UNSURE
    if said in (FASTER, SLOWER):
        return said, (f"beyond what the busy host explains (<= {allowances.busy:.0f}x: "
                      f"{allowances.doubt})")
    return UNSURE, allowances.doubt


def _over_the_group(said: str, reason: str, ratio: float, low: float, high: float,
                    threshold: float, bar: float, allowances: Allowances) -> tuple[str, str]:
    """The verdict once the group's median move (3+ variants) is taken out.

    GPU-time modes drift little between runs, and several variants changed at once would
    move the median: a change must show both as measured and over the median. Host-clock
    timings drift a lot and together (a whole CPU run 25% faster while one variant did
    twice the work showed +54% as measured, +97% over its group), so there the change
    over the median decides, when it points the same way as the measured one and the
    group moved by HOST_GROUP_DRIFT or more."""
    drift = allowances.drift
    if drift == 1.0:
        return said, reason
    corrected = verdict(low / drift, high / drift, threshold, bar)
    moved = f"the whole group moved {_signed(drift - 1)}: drift, or a change they share"
    if (allowances.host and corrected in (FASTER, SLOWER) and (ratio > 1) == (corrected == SLOWER)
            and abs(math.log(drift)) >= math.log(1 + HOST_GROUP_DRIFT)):
        return corrected, f"over the group's {_signed(drift - 1)}"
    if said in (FASTER, SLOWER) and corrected != said:
        return UNSURE, moved
    return said, reason


def _why_unsure(low: float, high: float, threshold: float, allowances: Allowances) -> str:
    """A few words for the table (short: they share a line with the figures at 80
    columns), naming the bound that made the verdict UNSURE, not the
    largest one: when the point's own bounds already hold the CI, a two-variant group's
    shift is not why (issue 28: "all other variants moved >=324%" for a +2.2% point that
    its noise explained, the 324% being the one other variant's own change)."""
    beyond = high < 1 / (1 + threshold) or low > 1 + threshold
    if not beyond:
        if high - low > 2 * threshold:
            return f"noisy: CI wider than ±{threshold:.0%}"
        return f"near the ±{threshold:.0%} threshold"
    size, which = allowances.own()
    own_bar = max(threshold, size)
    if allowances.group and verdict(low, high, threshold, own_bar) != UNSURE:
        return f"both variants moved ≥{_signed(allowances.group)}: drift?"
    if which == "clocks":
        return f"{allowances.clock_note}: clocks explain ≤{size:.1%}"
    if which == "host":
        return f"host clock drift ±{size:.0%}"
    return f"noise ±{size:.1%}"


def _signed(fraction: float) -> str:
    """'+324%', '+2.2%': whole percents from 100% up, where a tenth says nothing."""
    return f"{fraction:+.0%}" if abs(fraction) >= 1 else f"{fraction:+.1%}"


def compare_results(base, new, threshold: float = DEFAULT_THRESHOLD,
                    group: GroupShift | None = None,
                    repeats: RunsInterval | None = None, level: float = 0.95) -> Comparison:
    """Two Results (records/result.py) of one point, measured in two runs; `repeats`: the
    interval over several runs a side, which then decides in place of the bootstrap (the
    runs' spread is measured, so the samples' IQR no longer stands in for it)."""
    group = group or GroupShift()
    clocks, clock_note = clock_bound(base, new)
    doubts = [f"host busy in {label}: {reason}" for label, r in (("BASE", base), ("NEW", new))
              if (reason := _host_busy(r))]
    busy = max(busy_factor(r.host_load) for r in (base, new))
    noise = (max(relative_iqr(base.samples_s), relative_iqr(new.samples_s))
             if base.samples_s and new.samples_s else 0.0)
    host = HOST_CLOCK_ALLOWANCE.get(base.mode, 0.0)
    allowances = Allowances(noise=noise, group=group.witness, drift=group.drift,
                            clocks=clocks, clock_note=clock_note, host=host,
                            doubt="; ".join(doubts), busy=busy)
    if repeats is not None:
        return judge(repeats.base_median_s, repeats.new_median_s,
                     (repeats.ratio, repeats.low, repeats.high), threshold,
                     replace(allowances, noise=0.0), repeats.runs)
    return compare_samples(base.samples_s, new.samples_s, threshold, allowances, level)


# ---------------------------------------------------------------- two runs


@dataclass(frozen=True)
class PointComparison(Record):
    WRITTEN = ("key", "note", "verdict", "*comparison")  # the comparison's keys beside

    # records.point.PointKey, shared by both runs; written as its text
    key: object = field(metadata=saved_as(write=str))
    comparison: Comparison | None  # None when either side did not pass
    note: str = ""  # why there is no comparison
    # Without a comparison: status_change.BECAME_SUSPECT or BECAME_FAILED when the point
    # passed in BASE and is SUSPECT or failed in NEW (a regression), else ''.
    status_verdict: str = ""

    @property
    def verdict(self) -> str:
        return self.comparison.verdict if self.comparison else (self.status_verdict or "-")

    @property
    def regressed(self) -> bool:
        """SLOWER, or no longer trusted in NEW: what --fail-on-regression fails on."""
        return self.verdict in REGRESSION_VERDICTS


@dataclass(frozen=True)
class RunComparison(Record):
    WRITTEN = ("threshold", "level", "points", "only_base", "only_new", "env_differences",
               "missing_in_new", "counts")

    points: tuple[PointComparison, ...]
    # point keys measured in BASE only
    only_base: tuple[str, ...] = field(metadata=saved_as("only_in_base"))
    only_new: tuple[str, ...] = field(metadata=saved_as("only_in_new"))
    # 'gpu: NVIDIA H100 -> NVIDIA H200'
    env_differences: tuple[str, ...] = field(metadata=saved_as("environment_differences"))
    threshold: float = DEFAULT_THRESHOLD
    # Points BASE measured that NEW did not (status_change.missing_in_new): a subset of
    # only_base, plus those NEW left unrun.
    missing_in_new: tuple[str, ...] = ()
    level: float = 0.95  # of every point's interval (family_level); older records: 95%

    def regressions(self) -> list[PointComparison]:
        """SLOWER points, and points PASS in BASE but SUSPECT or failed in NEW."""
        return [p for p in self.points if p.regressed]

    def compared(self) -> list[PointComparison]:
        """The points that got a speed verdict."""
        return [p for p in self.points if p.comparison is not None]

    def fails_gate(self) -> bool:
        """What --fail-on-regression fails on (and 'regression: yes' says): a regression,
        BASE points missing in NEW, or no point compared (nothing vouched for)."""
        return bool(self.regressions() or self.missing_in_new or not self.compared())

    def counts(self) -> dict[str, int]:
        return dict(Counter(point.verdict for point in self.points))

    def by_key(self) -> dict[str, PointComparison]:
        return {p.key.text(): p for p in self.points}


def compare_runs(base, new, threshold: float = DEFAULT_THRESHOLD,
                 base_repeats: Sequence = (), new_repeats: Sequence = (),
                 level: float | None = None) -> RunComparison:
    """Two RunDocuments joined on the point key. Points that did not pass in either run
    get no speed verdict: a regression when PASS in BASE became SUSPECT or failed in NEW,
    else only listed (status_change.py); when the runs' machines or software differ every
    verdict is marked, and the differences named. `base_repeats`, `new_repeats`: more runs
    of each side's code; a point passed in three runs or more between the sides is judged
    over their medians (analysis/repeats.py). Each point at `level`, by default family_level
    over those that get a speed verdict (same GPU model): 5% family-wise."""
    base_runs, new_runs = (base, *base_repeats), (new, *new_repeats)
    check_sides(base_runs, new_runs)
    sides = ([run.by_key() for run in base_runs], [run.by_key() for run in new_runs])
    base_rows, new_rows = sides[0][0], sides[1][0]
    shared = [key for key in base_rows if key in new_rows]
    passed = {k for k in shared if base_rows[k].passed and new_rows[k].passed}
    timed = {k for k in passed
             if not (correctness_only(base_rows[k]) or correctness_only(new_rows[k]))}
    # Points timed on a busy host say nothing about the machine's drift: not witnesses.
    witnesses = [k for k in shared if k in timed
                 and not (_host_busy(base_rows[k]) or _host_busy(new_rows[k]))]
    level = level or family_level(sum(same_model(base_rows[k], new_rows[k]) for k in timed))
    intervals = {k: runs_interval(*(run_medians(k, s) for s in sides), level) for k in timed}
    shifts = group_shifts({k: _log_ratio(base_rows[k], new_rows[k], intervals[k])
                           for k in witnesses}, {k: base_rows[k].key for k in witnesses})
    differences = (environment_differences(base.env, new.env)
                   + repeat_differences(base_runs, new_runs))
    points = []
    for key in shared:
        old, fresh = base_rows[key], new_rows[key]
        if key not in passed:
            said, note = status_change(old, fresh)
            points.append(PointComparison(old.key, None, note, said))
            continue
        if correctness_only(old) or correctness_only(fresh):
            points.append(PointComparison(old.key, None, f"not compared for speed: "
                                                         f"{CORRECTNESS_ONLY}"))
            continue
        if not same_model(old, fresh):
            points.append(PointComparison(old.key, None, f"not compared: measured on "
                                                         f"{old.device_name} in BASE, "
                                                         f"{fresh.device_name} in NEW"))
            continue
        comparison = compare_results(old, fresh, threshold, shifts.get(key, GroupShift()),
                                     intervals[key], level)
        reason = "; ".join(r for r in (comparison.reason, config_change(old, fresh)) if r)
        points.append(PointComparison(old.key, replace(comparison, reason=reason,
                                                       marked=bool(differences))))
    return RunComparison(tuple(points), tuple(k for k in base_rows if k not in new_rows),
                         tuple(k for k in new_rows if k not in base_rows), differences,
                         threshold, missing_in_new(base_rows, new_rows), level)


def _host_busy(result) -> str | None:
    return busy_reason(result.host_load)


def _log_ratio(base, new, repeats: RunsInterval | None = None) -> float:
    """NEW/BASE as a log: over the runs a side where there are enough, else the pair's."""
    if repeats is not None:
        return math.log(repeats.ratio)
    if not (base.median_s and new.median_s):
        return 0.0
    return math.log(new.median_s / base.median_s)


@dataclass(frozen=True)
class GroupShift:
    """What the other variants of a point's group (family, dtype, shape, mode) say about
    the machine between the two runs."""

    drift: float = 1.0  # the group's median ratio NEW/BASE (3 or more variants), else 1
    # 2 variants: the move both made in this point's direction (the smaller of the two),
    # else 0.
    witness: float = 0.0


def group_shifts(log_ratios: dict[str, float], keys: dict) -> dict[str, GroupShift]:
    """Per point, the machine's move as its group saw it. With three or more variants the
    median ratio: robust while fewer than half of them changed, so a change must show in
    the point's ratio over the median. With two, which one changed cannot be told: the
    move both share in the same direction (at most the smaller of the two: a variant
    whose own code made it 4x slower says nothing about a 2% drift beyond those 2%) only
    raises the bar. Alone: nothing."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for name, key in keys.items():
        groups[(key.family, key.dtype, key.shape, key.mode)].append(name)
    shifts = {}
    for members in groups.values():
        if len(members) >= 3:
            drift = math.exp(quantile(sorted(log_ratios[m] for m in members), 0.5))
            shifts.update({name: GroupShift(drift=drift) for name in members})
            continue
        for name in members:
            others = [log_ratios[o] for o in members if o != name]
            if not others:
                shifts[name] = GroupShift()
                continue
            direction = math.copysign(1.0, log_ratios[name])
            common = max(0.0, min(direction * log_ratios[name], direction * others[0]))
            shifts[name] = GroupShift(witness=math.expm1(common))
    return shifts

"""`history --check --confirm`: is a flagged step real? An in-process `ab` of the code the
first run after the step measured against the code the last run before it measured, on the
series' variant; the step is confirmed only where that A/B reads SLOWER at the series'
point, by at least half the step (SHARE_OF_STEP). A step that other work on the machine made
(a busy GPU, a throttled run) is not in the code, and the A/B of the two commits, made now,
says so. An A/B that cannot run or does not pair the point measures nothing: the step
stands as the series flagged it (`stands`), for a gate must not pass what it did not check.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gpubench import errors
from gpubench.analysis.history import Series, SeriesChange
from gpubench.commands.revision_ab import ab_of_revisions
from gpubench.records.ab import PairVerdict
from gpubench.run.config import RunConfig
from gpubench.store.folder import load_run

# An A/B that reads SUSPECT (the judge held a side: other work on a busy host slowed its
# re-check) or UNSURE (too few blocks in its time) has no speed verdict: it is asked once
# more, with twice the time, before the step is called not confirmed.
UNDECIDED = ("SUSPECT", "UNSURE")
ATTEMPTS = 2
# The A/B must find at least this share of the series' step: the two estimates of one real
# step agree within a third or so (a +3.3% step of a series read +4.1% in its A/B), while a
# step that other work made (+140% beside another process's matmuls) leaves the A/B a few
# percent at most, which is some other, smaller difference (a compiled row's two builds
# differ by up to 3%), not the step.
SHARE_OF_STEP = 0.5


@dataclass(frozen=True)
class Confirmation:
    confirmed: bool
    said: str  # 'confirmed: +300% [+296%, +305%] (ab 1a2b3c4 against 9f8e7d6)'
    stands: bool = False  # nothing was measured: the step stays as the series flagged it


def _unmeasured(why: str) -> Confirmation:
    return Confirmation(False, f"not checked, the step stands: {why}", stands=True)


def confirm_step(series: Series, change: SeriesChange, scratch: Path) -> Confirmation:
    """The A/B of the step's two commits at the series' point (module docstring)."""
    before, after = change.before, change.after
    old, new = before.changed or before.commit, after.changed or after.commit
    if not old or not new:
        return _unmeasured("a run of the step recorded no commit")
    if old == new:
        return Confirmation(False, "not confirmed: both runs measured the same code, so "
                                   "the step is not in it")
    try:
        folder = Path(load_run(Path(after.run_dir)).meta["revisions"]["families"]
                      [after.family]["folder"])
    except (errors.GpubenchError, KeyError, TypeError, OSError) as exc:
        return _unmeasured(f"the A/B could not run ({exc})")
    label = f"ab {new[:12]} against {old[:12]}"
    config = RunConfig(variants=(after.variant,))  # named, so ab pairs a compiled row too
    for attempt in range(1, ATTEMPTS + 1):
        try:
            pairs = ab_of_revisions(after.family, folder, old, new, scratch /
                                    f"{after.variant}-{old[:12]}-{new[:12]}-{attempt}", config)
        except (errors.GpubenchError, KeyError, TypeError, OSError) as exc:
            return _unmeasured(f"the A/B could not run ({exc})")
        pair = _pair_at(pairs, after)
        if pair is None:
            return _unmeasured(f"the A/B did not pair this point ({label})")
        if pair.verdict not in UNDECIDED:
            break
        config = replace(config, timing=replace(config.timing,
                                                max_time_s=2 * config.timing.max_time_s))
    change_text = f"{pair.change:+.1%} [{pair.low - 1:+.1%}, {pair.high - 1:+.1%}]"
    tries = f", after {attempt} A/Bs" if attempt > 1 else ""
    if pair.verdict == "SLOWER" and pair.high - 1 >= SHARE_OF_STEP * (change.change.ratio - 1):
        return Confirmation(True, f"confirmed: {change_text} ({label}{tries})")
    smaller = f", under half the step's {change.change.ratio - 1:+.1%}" \
        if pair.verdict == "SLOWER" else ""
    return Confirmation(False, f"not confirmed: {pair.verdict} {change_text}{smaller} "
                               f"({label}{tries})")


def _pair_at(pairs: tuple[PairVerdict, ...], run) -> PairVerdict | None:
    """The A/B's verdict at the run's point (variant, dtype, shape, mode), if it paired it."""
    for v in pairs:
        if (v.variant, v.dtype, v.shape, v.mode) == (run.variant, run.dtype, run.shape,
                                                     run.mode):
            return v
    return None

"""`history --check --confirm`: is a flagged step real? An in-process `ab` of the code the
first run after the step measured against the code the last run before it measured, on the
series' variant; the step is confirmed only where that A/B reads SLOWER at the series'
point. A step that other work on the machine made (a busy GPU, a throttled run) is not in
the code, and the A/B of the two commits, made now, says so.
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


@dataclass(frozen=True)
class Confirmation:
    confirmed: bool
    said: str  # 'confirmed: +300% [+296%, +305%] (ab 1a2b3c4 against 9f8e7d6)'


def confirm_step(series: Series, change: SeriesChange, scratch: Path) -> Confirmation:
    """The A/B of the step's two commits at the series' point (module docstring)."""
    before, after = change.before, change.after
    old, new = before.changed or before.commit, after.changed or after.commit
    if not old or not new:
        return Confirmation(False, "not confirmed: a run of the step recorded no commit")
    if old == new:
        return Confirmation(False, "not confirmed: both runs measured the same code, so "
                                   "the step is not in it")
    try:
        folder = Path(load_run(Path(after.run_dir)).meta["revisions"]["families"]
                      [after.family]["folder"])
    except (errors.GpubenchError, KeyError, TypeError, OSError) as exc:
        return Confirmation(False, f"not confirmed: the A/B could not run ({exc})")
    label = f"ab {new[:12]} against {old[:12]}"
    config = RunConfig(variants=(after.variant,))
    for attempt in range(1, ATTEMPTS + 1):
        try:
            pairs = ab_of_revisions(after.family, folder, old, new, scratch /
                                    f"{after.variant}-{old[:12]}-{new[:12]}-{attempt}", config)
        except (errors.GpubenchError, KeyError, TypeError, OSError) as exc:
            return Confirmation(False, f"not confirmed: the A/B could not run ({exc})")
        pair = _pair_at(pairs, after)
        if pair is None:
            return Confirmation(False, f"not confirmed: the A/B did not pair this point ({label})")
        if pair.verdict not in UNDECIDED:
            break
        config = replace(config, timing=replace(config.timing,
                                                max_time_s=2 * config.timing.max_time_s))
    change_text = f"{pair.change:+.1%} [{pair.low - 1:+.1%}, {pair.high - 1:+.1%}]"
    tries = f", after {attempt} A/Bs" if attempt > 1 else ""
    if pair.verdict == "SLOWER":
        return Confirmation(True, f"confirmed: {change_text} ({label}{tries})")
    return Confirmation(False, f"not confirmed: {pair.verdict} {change_text} ({label}{tries})")


def _pair_at(pairs: tuple[PairVerdict, ...], run) -> PairVerdict | None:
    """The A/B's verdict at the run's point (variant, dtype, shape, mode), if it paired it."""
    for v in pairs:
        if (v.variant, v.dtype, v.shape, v.mode) == (run.variant, run.dtype, run.shape,
                                                     run.mode):
            return v
    return None

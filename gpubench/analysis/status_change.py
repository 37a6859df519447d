"""What two runs' statuses say about a point when there is no speed to compare.

A speed verdict (comparison.py) needs a trusted time on both sides: PASS in both runs.
Every other pair of statuses still says something a CI gate must hear:

- PASS in BASE, SUSPECT in NEW: the output is still right, but NEW's time games the timer
  or lies beyond physics (records/result.py). Comparing that time would call a cheat
  FASTER; it is a regression instead, with NEW's reason.
- PASS in BASE, failed in NEW (FAIL, ERROR, CRASHED, TIMEOUT, BUILD ERROR): a kernel that
  stopped working is a regression too, or a gate that counts SUSPECT would let a worse
  outcome through.
- SUSPECT in BASE: BASE's time was never trusted, so there is nothing to compare a speed
  against, whatever NEW did. Not a regression: the point was already untrusted.
- Points of BASE that NEW did not measure (absent, or not run: a killed NEW run) are
  counted apart (`missing_in_new`): a gate cannot vouch for them.

Pure: statuses and error strings in, words out.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpubench.records.result import FAILED_STATUSES, NOT_RUN, OK, SKIPPED, SUSPECT, status_label

# Verdicts of a point with no speed comparison, beside comparison.VERDICTS.
BECAME_SUSPECT = "SUSPECT"  # PASS in BASE, SUSPECT in NEW
BECAME_FAILED = "FAILED"  # PASS in BASE, failed in NEW
STATUS_VERDICTS = (BECAME_SUSPECT, BECAME_FAILED)


def status_change(base, new) -> tuple[str, str]:
    """(verdict, note) of a point not PASS in both runs: the verdict is BECAME_SUSPECT or
    BECAME_FAILED for a regression, '' when the point is only listed."""
    if base.status == OK and new.status == SUSPECT:
        return BECAME_SUSPECT, f"SUSPECT in NEW: {new.error or 'no reason recorded'}"
    if base.status == OK and new.status in FAILED_STATUSES:
        why = f": {new.error}" if new.error else ""
        return BECAME_FAILED, f"{status_label(new.status)} in NEW{why}"
    if base.status == SUSPECT:
        why = f" ({base.error})" if base.error else ""
        return "", (f"not compared for speed: SUSPECT in BASE{why}, "
                    f"{status_label(new.status)} in NEW")
    return "", (f"not compared: {status_label(base.status)} in BASE, "
                f"{status_label(new.status)} in NEW")


def missing_in_new(base_rows: Mapping, new_rows: Mapping) -> tuple[str, ...]:
    """Keys of the points BASE measured (neither skipped nor left unrun) that NEW did not:
    absent from NEW, or not run there (a NEW run killed half-way leaves these)."""
    return tuple(key for key, row in base_rows.items()
                 if row.status not in (SKIPPED, NOT_RUN)
                 and (key not in new_rows or new_rows[key].status == NOT_RUN))

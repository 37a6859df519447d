"""Whether a run document holds every point its run planned: the `incomplete` mark.

results.json is saved after every point, so that a gpubench stopped by `kill -9` (or
ended by the spec code it imported, which can call os._exit) loses at most the point in
progress. Such a folder must not read as a finished run: every save made while points
are still to come lists them as NOT_RUN with the reason below and carries
meta["incomplete"]; only the final save of a run where every planned point has a status
drops the mark and sets meta["finished"]. `report` shows the mark; `compare` counts the
NOT_RUN points of NEW as missing (a regression under --fail-on-regression).
"""

from __future__ import annotations

INCOMPLETE = "incomplete"  # the meta key; its value says why

# A planned point without a status, at a save made while the run was going: a later
# save replaces the row, unless gpubench never got to make one.
NO_STATUS_YET = ("not run: gpubench ended before this point (killed, or its process ended "
                 "early) — the run folder was last saved while the run was going")
# A planned point still without a status when the run ended (a lane that died).
NO_STATUS = "not run: the run ended without a status for this point"


def incomplete_reason(missing: int, total: int, final: bool) -> str:
    """meta["incomplete"]: how many planned results have no status, and why."""
    if final:
        return f"{missing} of {total} planned results got no status"
    return (f"{missing} of {total} planned results had no status at the last save (the run "
            "was still going then; if no gpubench runs into this folder now, it was killed "
            "or its process ended early)")


def incomplete_of(meta: dict) -> str | None:
    """The run's incomplete mark, or None for a complete run (or a file from before the
    mark, which cannot tell)."""
    value = meta.get(INCOMPLETE)
    return str(value) if value else None

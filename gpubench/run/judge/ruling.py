"""The judge's word on a task, and how it overrules the worker's (pure: no process here).

The worker reports its own verdict in its result; variant code ran in that process and
may have rewritten anything there, so a pass stands only if the judge, which the variant
cannot reach, agrees: it saw the first call's output and, for a timed result, re-checked
outputs, and every output it saw passed. A failure the worker itself found stands as it
is (its message says more, and failing is never what a cheat wants).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpubench.codec import Record
from gpubench.records.result import FAIL, OK
from gpubench.records.worker_result import WorkerResult
from gpubench.timing.check_result import CheckResult

# What the worker asks the judge, by role: the first call's output; a timed call's
# output drawn for the re-check; an output of the fresh-input probe; inputs after the calls.
CHECK, RECHECK, FRESH, INPUTS = "check", "recheck", "fresh", "inputs"


@dataclass(frozen=True)
class JudgeSummary(Record):
    """What the judge saw during one task: requests by role, the wrong ones by role, the
    first wrong one's reason (None: every output and input it saw was right) and the first
    call's check as it made it."""

    roles: dict = field(default_factory=dict)
    failure: str | None = None
    check: CheckResult | None = None
    wrong: dict = field(default_factory=dict)



def rule(result: WorkerResult, summary: JudgeSummary | None) -> WorkerResult:
    """The result as the judge lets it stand: `summary` None when the judge gave none
    (it exited, was killed, or did not answer)."""
    if result.status != OK:
        return result
    why = objection(result, summary)
    if why:
        return replace(result, status=FAIL, error=why)
    return replace(result, check=summary.check or result.check)


def objection(result: WorkerResult, summary: JudgeSummary | None) -> str | None:
    """Why the judge does not let a reported pass stand, or None."""
    if summary is None:
        return ("the judge (the process that checks outputs apart from the variant's) "
                "gave no verdict: it exited or was killed during this task, and a pass "
                "needs its word")
    if _unreported(result, summary):
        return (f"the judge found {summary.failure}, while the worker reported a pass: "
                "code in the worker changed its check")
    if not summary.roles.get(CHECK):
        return ("no output of the checked call reached the judge, while the worker "
                "reported a pass: code in the worker bypassed the check")
    timed = [mode for mode, m in result.measurements.items() if m.recheck is not None]
    if timed and not summary.roles.get(RECHECK):
        return (f"no re-checked output of the timed calls ({', '.join(timed)}) reached the "
                "judge, while the worker reported them checked")
    return None


def _unreported(result: WorkerResult, summary: JudgeSummary) -> bool:
    """Whether the judge found more wrong than the worker reports. A wrong check, fresh
    call or input makes the worker FAIL the task; a wrong re-check fails only its mode (a
    measurement with recheck_failed, each mode's verdict stopping at its first wrong copy)."""
    wrong = dict(summary.wrong)
    reported = sum(1 for m in result.measurements.values() if m.recheck_failed)
    return wrong.pop(RECHECK, 0) > reported or any(wrong.values())

"""The judge's word on a task, and how it overrules the worker's (pure: no process here).

The worker reports its own verdict in its result; variant code ran in that process and
may have rewritten anything there, so a pass stands only if the judge, which the variant
cannot reach, agrees: it saw the first call's output and, for a timed result, re-checked
outputs, and every output it saw passed. A failure the worker itself found stands as it
is (its message says more, and failing is never what a cheat wants).

The judge's word counts only when it is bound to the task: the parent sends a one-time
nonce with "close" (after the worker's result, when no variant code runs, as the result
key is: lanes/protocol.py), and the summary echoes it with the digest of the task the judge
loaded. Anything else on the report pipe, and anything the judge was told that gpubench did
not say (a second "open", a "close" without a nonce), is tampering: the task FAILs, naming
it, whatever the worker reported.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace

from gpubench.codec import Record
from gpubench.records.point import Task
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
    call's check as it made it; the nonce of the "close" it answers and the digest of the
    task it loaded (task_digest; None: none was open), which bind it to one task; and what
    reached it that gpubench did not send (`tampering`: a second "open", a "close" without
    a nonce). The parent adds to `tampering` what reached it that the judge did not send."""

    roles: dict = field(default_factory=dict)
    failure: str | None = None
    check: CheckResult | None = None
    wrong: dict = field(default_factory=dict)
    nonce: str | None = None
    task: str | None = None
    tampering: tuple[str, ...] = ()


def task_digest(task: Task) -> str:
    """sha256 of the task's canonical JSON: the parent's of the task it opens, the judge's
    of the task it loaded, equal only for the same task."""
    canonical = json.dumps(task.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# The end of every reason that blames the pipes between gpubench and the judge.
PIPES = "something wrote into the judge's pipes"


def unbound(message: dict, nonce: str, digest: str) -> str | None:
    """Why `message`, read from the judge's report pipe after a "close" carrying `nonce`,
    is not the judge's summary of the task whose digest is `digest`; None when it is."""
    summary = message.get("summary")
    if not isinstance(summary, dict):
        what = "a message that is not a judge summary"
    elif not summary.get("nonce"):
        what = "a judge summary not bound to this task (no nonce)"
    elif summary.get("nonce") != nonce:
        what = "a judge summary not bound to this task (wrong nonce)"
    elif summary.get("task") != digest:
        what = ("a judge summary of another task than gpubench opened (the judge loaded "
                f"{'no task' if summary.get('task') is None else 'another one'})")
    else:
        return None
    return f"{what} reached gpubench: {PIPES}"



def rule(result: WorkerResult, summary: JudgeSummary | None) -> WorkerResult:
    """The result as the judge lets it stand: `summary` None when the judge gave none
    (it exited, was killed, or did not answer). Tampering with the judge's pipes FAILs
    any result: what the worker said was judged by a judge that was not alone with it."""
    if summary is not None and summary.tampering:
        said = "" if result.status == OK else f" (the worker said {result.status}: {result.error})"
        return replace(result, status=FAIL, error="; ".join(summary.tampering) + said)
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

"""The parent's line to a worker's judge: the pipes and the socket made before the worker
starts (the worker forks the judge with them, server.py), then, per task, "open" before
the worker gets it and "close" after its result, which the judge answers with what it saw
(ruling.JudgeSummary).

"close" carries a one-time nonce, made after the worker's result, when no variant code
runs; the summary must echo it and the digest of the task this line opened. Anything else
on the report pipe (a summary forged ahead of the judge's, the answer to a "close" that
gpubench did not send) is tampering, and the task's summary says so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time

from gpubench.records.point import Task
from gpubench.run.judge import wire
from gpubench.run.judge.ruling import JudgeSummary, task_digest, unbound
from gpubench.run.judge.server import JudgeEnds
from gpubench.run.lanes.protocol import LineReader, send

# The judge has answered every request of the worker's by the time the worker's result
# arrives (each request waits for its answer); this bounds a judge kept busy by requests
# a variant's leftover thread sent.
SUMMARY_TIMEOUT_S = 60.0


class JudgeLine:
    def __init__(self):
        control_read, self.control = os.pipe()
        self.reports, report_write = os.pipe()
        judge_socket, worker_socket = wire.pair()
        self.ends = JudgeEnds(control_read, report_write, judge_socket.detach(),
                              worker_socket.detach())
        self.reader = LineReader(self.reports)
        self.broken = False
        self.digest: str | None = None  # of the task opened last

    def child_fds(self) -> tuple[int, ...]:
        """The descriptors the worker inherits (its ends and the judge's)."""
        ends = self.ends
        return (ends.control, ends.report, ends.judge_socket, ends.worker_socket)

    def started(self) -> None:
        """The worker holds its copies now: close the parent's."""
        for fd in self.child_fds():
            with contextlib.suppress(OSError):
                os.close(fd)

    def open(self, task: Task) -> None:
        self.digest = task_digest(task)
        self._say({"open": task.to_dict()})

    def summary(self, timeout_s: float = SUMMARY_TIMEOUT_S) -> JudgeSummary | None:
        """What the judge saw since `open` (None: it is gone or did not answer). The first
        message on the report pipe must be the judge's answer to this "close"; when it is
        not, the summary holds only the tampering, and this line is spent: nothing on it
        can be told apart from a forgery any more."""
        nonce = secrets.token_hex(16)
        self._say({"close": {"nonce": nonce}})
        deadline = time.monotonic() + timeout_s
        try:
            if not self.broken and (message := self.reader.wait(deadline)) is not None:
                why = unbound(message, nonce, self.digest or "")
                if why is None:
                    return JudgeSummary.from_dict(message["summary"])
                self.broken = True
                return JudgeSummary(tampering=(why,))
        except (OSError, ValueError):  # the pipe went away under the read; a summary that
            pass  # carries the nonce and the digest yet cannot be read: gpubench's own bug
        self.broken = True
        return None

    def close(self) -> None:
        for fd in (self.control, self.reports):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _say(self, message: dict) -> None:
        if self.broken:
            return
        try:
            send(self.control, message)
        except OSError:
            self.broken = True

"""Signals from a variant to gpubench: refused, and the variant named.

A variant that sends SIGTERM to gpubench (`os.kill(os.getppid(), ...)`) stopped the
whole run with exit 143 and was never named. The worker installs a Python audit hook
at start (sys.addaudithook: it cannot be removed, and it runs before the call): a
signal aimed at gpubench's process, its process group, or every process (-1)
raises PermissionError inside the variant, and the attempt is kept for the task's
verdict (tamper.Watch), which FAILs the variant and replaces the worker.

Limit: the hook sees Python's os.kill, os.killpg and signal.pthread_kill only; a
signal sent by native code (ctypes' libc.kill, a C++ extension) or by a child
program (`kill PID`) is not seen here.
"""

from __future__ import annotations

import os
import signal
import sys

# os.kill(pid, sig) with pid -1 signals every process the user may signal, gpubench too.
EVERY_PROCESS = -1


class SignalGuard:
    """Installed once per worker: which pids and groups are gpubench's, what was tried."""

    def __init__(self, parent_pid: int):
        self.parent_pid = parent_pid
        self.parent_group = _group_of(parent_pid)
        self.attempts: list[str] = []

    def install(self) -> None:
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if event == "os.kill" and self._hits_parent(args[0], group=False):
            self._refuse(args[0], args[1], "")
        elif event == "os.killpg" and self._hits_parent(args[0], group=True):
            self._refuse(args[0], args[1], "the process group of ")

    def _hits_parent(self, target: int, group: bool) -> bool:
        if group:
            return target == self.parent_group
        return target in (self.parent_pid, EVERY_PROCESS) or -target == self.parent_group

    def _refuse(self, target: int, signum: int, what: str) -> None:
        attempt = (f"tried to send {_signal_name(signum)} to {what}gpubench (pid "
                   f"{self.parent_pid}, target {target})")
        self.attempts.append(attempt)
        raise PermissionError(f"gpubench: a variant may not signal gpubench ({attempt})")

    def take_attempts(self) -> list[str]:
        """The attempts since the last call, cleared."""
        found, self.attempts = self.attempts, []
        return found


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"

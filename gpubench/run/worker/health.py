"""After each task, in the worker: is this process still fit to run the next variant?

tamper.py asks whether the variant changed gpubench's code; this asks whether it left
the process in a state the next variant would inherit, so that the fault is blamed on
the variant that made it, never on the one after:

- a standard descriptor (0, 1, 2) or the message channel closed or pointing at another
  file (compared by st_dev/st_ino): the worker's next log line or task read would fail
  during the next task (seen as that task's crash);
- a copy of the worker made by fork() (os.fork, or a C fork whose child did not exec)
  still there: it shares the channel and stdin, so it can answer for the next task;
- other processes the task started and left running (or unreaped): they would load the
  machine while the next variant is timed.

The first two make the task FAIL and the worker exit (its parent starts a fresh one);
the third keeps the task's result but retires the worker after it, so the next task
gets a fresh process and nothing left over (killing the worker kills its descendants,
in new sessions too: gpubench/run/lanes/processes.py).

Not seen here: a signal the variant sent to gpubench itself (see docs/guide.md, limits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gpubench.run.lanes.processes import PROC, children, kill_tree, state

# Descriptors the worker depends on, by name for the verdict.
STANDARD = {0: "stdin", 1: "stdout", 2: "stderr"}
# Processes named in a verdict, at most.
MAX_NAMED = 5


@dataclass(frozen=True)
class Verdict:
    """What the check found: `fail` makes the task FAIL and the worker exit; `retire`
    keeps the result and restarts the worker before the next task."""

    fail: str | None = None
    retire: str | None = None


class Health:
    """What the worker looked like before the task: its descriptors (once) and children."""

    def __init__(self, channel: int, keep: tuple[int, ...] = ()):
        self.pid = os.getpid()
        self.keep = keep  # the worker's own children (its watchdog)
        self.channel = channel
        self.fds = {fd: identity(fd) for fd in (*STANDARD, channel)}
        self.spare = os.dup(channel)  # not inherited by children, like the channel
        self.cmdline = _cmdline(self.pid)
        self.children_before: set[int] = set()
        self.forks = 0
        os.register_at_fork(after_in_parent=self._forked)

    def _forked(self) -> None:
        self.forks += 1

    def is_copy(self) -> bool:
        """True in a copy of the worker made by a variant's fork(): it must not speak."""
        return os.getpid() != self.pid

    def before_task(self) -> None:
        self.children_before = set(children(self.pid))
        self.forks = 0

    def verdict(self) -> Verdict:
        fail = [reason for reason in (self._descriptors(), self._copies()) if reason]
        return Verdict("; ".join(fail) or None, None if fail else self._left_running())

    def _descriptors(self) -> str | None:
        changed = [_describe(fd) for fd, before in self.fds.items()
                   if before is not None and identity(fd) != before]
        if not changed:
            return None
        return ("closed or replaced descriptor " + ", ".join(changed) +
                ": the worker's output and messages depend on them")

    def _copies(self) -> str | None:
        new = self._new_children()
        # A live copy runs the worker's own command line; a copy that already exited (the
        # worker's code ends one at once: see worker.py) is a zombie after an os.fork().
        copies = [pid for pid in new if _cmdline(pid) == self.cmdline
                  or (self.forks and state(pid) == "Z")]
        if not copies:
            return None
        return (f"forked the worker process and left {len(copies)} cop"
                f"{'y' if len(copies) == 1 else 'ies'} behind ({_named(copies)}): a copy "
                "shares gpubench's channel and could answer for the next task")

    def _left_running(self) -> str | None:
        new = self._new_children()
        if not new:
            return None
        return f"left {len(new)} process(es) behind ({_named(new)}): the worker restarts"

    def _new_children(self) -> list[int]:
        return [pid for pid in children(self.pid) if pid not in self.children_before]

    def end_leftovers(self) -> None:
        """Kill what the task left below the worker (new sessions too: the worker is
        their subreaper) before the worker exits and they would be orphaned."""
        kill_tree(self.pid, keep=self.keep)

    def channel_for_verdict(self) -> int:
        """The message channel, or its spare when the variant closed or replaced it (a
        spare it closed too leaves the parent an EOF: that task's CRASHED, still its own)."""
        return self.channel if identity(self.channel) == self.fds[self.channel] else self.spare


def identity(fd: int) -> tuple[int, int] | None:
    """(st_dev, st_ino) of what `fd` is open on, None when it is closed."""
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _describe(fd: int) -> str:
    name = STANDARD.get(fd, "gpubench's message channel")
    return f"{fd} ({name})"


def _named(pids: list[int]) -> str:
    shown = [f"pid {pid} {_command(pid)} [{state(pid) or 'gone'}]" for pid in pids[:MAX_NAMED]]
    return ", ".join(shown) + (", ..." if len(pids) > MAX_NAMED else "")


def _command(pid: int) -> str:
    try:
        return (PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"


def _cmdline(pid: int) -> bytes | None:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None

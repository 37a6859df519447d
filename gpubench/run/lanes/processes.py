"""Process trees that end when they must: every process a worker or a profiler starts,
and theirs, is killed with it.

Why sessions, not process groups: the worker and each profiler run in a session of
their own (start_new_session), and ninja starts every compiler in a process group of
its own, so killpg(worker) misses cc1plus and nvcc. A process can leave its group but
not, short of setsid(), its session; so "kill the session" reaches ninja, the
compilers and whatever a variant spawned. Linux reads sessions from /proc; elsewhere
the process group is the fallback.

A process can leave its session with setsid(), though: a variant's helper started in a
new session would outlive the run. So the worker (and gpubench itself) is a child
subreaper (Linux prctl PR_SET_CHILD_SUBREAPER): an orphan anywhere below it is
re-parented to it rather than to PID 1, so "the worker's descendants" (read from
/proc/PID/task/*/children) is everything it ever started, whatever session each is
in; kill_tree kills them while the worker still lives to hold the tree together, then
the session goes as before.

The watchdog covers the case no parent code can: `kill -9` of gpubench itself. The
worker forks it first thing; it polls gpubench and the worker, and when either is
gone it kills the worker's descendants and everything left in its session, then itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")
# How often the watchdog looks: a leftover process lives at most this long.
WATCH_INTERVAL_S = 0.5
# Kill rounds: a process may fork while we kill; three sweeps catch the stragglers.
KILL_ROUNDS = 3
# Set to a file path to log every session kill and watchdog decision there (debugging).
DEBUG_LOG = os.environ.get("GPUBENCH_DEBUG_PROCESSES")
# prctl option from <linux/prctl.h>: orphaned descendants are re-parented to the caller.
PR_SET_CHILD_SUBREAPER = 36


def _debug(message: str) -> None:
    if DEBUG_LOG:
        with contextlib.suppress(OSError), open(DEBUG_LOG, "a") as sink:
            sink.write(f"{time.time():.3f} pid {os.getpid()}: {message}\n")


def session_members(sid: int) -> list[int]:
    """Pids of the processes in session `sid` (Linux /proc; [] elsewhere)."""
    members = []
    for entry in PROC.glob("[0-9]*"):
        stat = _stat_fields(entry / "stat")
        if stat and stat[3] == sid and stat[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def kill_session(sid: int, keep: tuple[int, ...] = ()) -> int:
    """SIGKILL every process of session `sid` except `keep`; returns how many were hit."""
    if not PROC.is_dir():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(sid, signal.SIGKILL)
        return 0
    return _kill_in_rounds(lambda: [pid for pid in session_members(sid) if pid not in keep],
                           f"kill_session {sid}")


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux only; False when
    it cannot): a child that calls setsid() and is orphaned stays below it."""
    if not PROC.is_dir():
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def children(pid: int) -> list[int]:
    """The direct children of `pid`, zombies included (Linux /proc; [] elsewhere). A
    process that is reaped while this reads has none: its /proc folder goes away under the
    listing of its threads, an OSError that would end the caller (a kill, a build's
    progress) at the moment processes end, which is when they are asked about."""
    found: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found += [int(item) for item in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    found, frontier = [], [pid]
    while frontier:
        below = [child for parent in frontier for child in children(parent)
                 if child not in found]
        found += below
        frontier = below
    return found


def kill_tree(pid: int, keep: tuple[int, ...] = ()) -> int:
    """SIGKILL every descendant of `pid` (not `pid` itself, nor `keep`), in rounds: while
    `pid` lives and is a subreaper, a child orphaned by this very kill stays below it
    and is found in the next round. Returns how many were hit."""
    return _kill_in_rounds(lambda: [child for child in descendants(pid) if child not in keep
                                    and state(child) not in ("Z", "X", None)],
                           f"kill_tree {pid}")


def _kill_in_rounds(find_targets, label: str) -> int:
    """SIGKILL what `find_targets()` names, again until it names nothing (a process may
    fork or be re-parented in between), at most KILL_ROUNDS times. Returns the hits."""
    hit = 0
    for _ in range(KILL_ROUNDS):
        targets = find_targets()
        _debug(f"{label}: targets {targets}")
        if not targets:
            break
        for target in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(target, signal.SIGKILL)
                hit += 1
        time.sleep(0.05)
    return hit


def state(pid: int) -> str | None:
    """The /proc state letter of `pid` (R, S, Z, ...), None when it is gone."""
    fields = _stat_fields(PROC / str(pid) / "stat")
    return fields[0] if fields else None


def alive(pid: int, started: str | None = None) -> bool:
    """Whether `pid` runs and is the process that started at `started` (/proc start time),
    so a recycled pid does not count."""
    if started is not None and PROC.is_dir():
        fields = _stat_fields(PROC / str(pid) / "stat")
        return bool(fields) and fields[0] not in ("Z", "X") and str(fields[19]) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> str | None:
    fields = _stat_fields(PROC / str(pid) / "stat")
    return str(fields[19]) if fields else None


def start_watchdog(guarded: int) -> int | None:
    """Fork a watchdog for this process (the worker) and `guarded` (gpubench): when either
    ends, it kills what is left of this session. Returns its pid (None off Linux)."""
    if not PROC.is_dir() or not hasattr(os, "fork"):
        return None
    worker, worker_started = os.getpid(), start_time(os.getpid())
    guarded_started = start_time(guarded)
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: no Python cleanup, no shared descriptors beyond what it needs
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.closerange(0, 1 << 16)
        _debug(f"watchdog of worker {worker} and gpubench {guarded}")
        while alive(guarded, guarded_started) and alive(worker, worker_started):
            time.sleep(WATCH_INTERVAL_S)
        _debug(f"watchdog: gpubench alive {alive(guarded, guarded_started)}, worker alive "
               f"{alive(worker, worker_started)}")
        if alive(worker, worker_started):  # those in new sessions, while it holds them
            kill_tree(worker, keep=(os.getpid(),))
        kill_session(os.getsid(0), keep=(os.getpid(),))
    finally:
        os._exit(0)


def _stat_fields(path: Path) -> list | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...] with
    numbers as ints; the name may hold spaces and parentheses, so split after the last ')'."""
    try:
        text = path.read_text()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[-1].split()
    return [rest[0], *(int(x) if x.lstrip("-").isdigit() else x for x in rest[1:])]

"""prctl(PR_SET_DUMPABLE) for the processes that hold what variant code must not reach.

A dumpable process's /proc/PID/fd, /proc/PID/mem and ptrace are open to every process of
its user: a variant in the worker could open gpubench's own ends of the judge's pipes
(opening /proc/PID/fd/N of a pipe gives a new end of that pipe) and speak for gpubench to
the judge, or for the judge to gpubench. A non-dumpable one's are open only to root (or
a process with CAP_SYS_PTRACE). So the judge makes itself non-dumpable (server.py), and so
does gpubench's own process before it starts its first worker (lanes/worker_process.py).

That is safe for everything gpubench starts: the flag resets to 1 across execve (unless the
program is set-uid), so its workers, ncu, nsys and the compilers run dumpable as before;
only a fork() without exec (the judge, a watchdog) inherits it.
"""

from __future__ import annotations

# prctl(2)'s options: the flag's value is 0 (not dumpable), 1 (dumpable) or 2 (root only).
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4


def prctl_dumpable(value: int | None = None) -> int | None:
    """Set this process's dumpable flag to `value` (None: leave it) and return it as it is
    now; None where prctl is not there to call (not Linux, no libc to load). Setting the
    flag it already has changes nothing: callers need not remember whether they did."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    if value is not None:
        prctl(PR_SET_DUMPABLE, int(value), 0, 0, 0)
    flag = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)
    return None if flag < 0 else int(flag)

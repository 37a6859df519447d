"""The guard around importing a user's file (a family's spec.py, a kernel's launcher, a
leaderboard problem's files): its top-level code cannot end, fork or hang gpubench.

Spec folders (discovery.py) and leaderboard problems (leaderboard/modules.py) import user
code under the same guard, and discovery hands problem folders to the leaderboard, so the
guard lives below both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

# A spec imports torch and maybe triton (seconds); a minute means it will never finish.
SPEC_IMPORT_TIMEOUT_S = float(os.environ.get("GPUBENCH_SPEC_TIMEOUT_S", "60"))


class ImportAborted(BaseException):
    """Raised inside a spec's import to stop it: the message says why."""


@contextlib.contextmanager
def guarded_import(path: Path):
    """Run a spec's top-level code so that it cannot end or hang gpubench: os._exit()
    raises instead of exiting, a time limit interrupts endless loops (SIGALRM, main
    thread only), and what it prints goes to stderr, never into tables or --json. Not a
    sandbox: code that blocks inside C, or kills its own process, still can."""
    def refuse_exit(code=0):
        raise ImportAborted(f"called os._exit({code}) while being imported")

    def out_of_time(signum, frame):
        raise ImportAborted(f"did not finish importing within {SPEC_IMPORT_TIMEOUT_S:g} s "
                             "(an endless loop or a wait at import time?)")

    real_exit, os._exit = os._exit, refuse_exit
    timed = threading.current_thread() is threading.main_thread() and hasattr(signal,
                                                                                "setitimer")
    if timed:
        previous = signal.signal(signal.SIGALRM, out_of_time)
        signal.setitimer(signal.ITIMER_REAL, SPEC_IMPORT_TIMEOUT_S)
    pid, cwd, forks = os.getpid(), os.getcwd(), _FORKS[0]
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if os.getpid() != pid:  # a copy the file's os.fork() made: it ends here, silent
            real_exit(0)
        os._exit = real_exit
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if os.getcwd() != cwd:  # gpubench's relative paths (--out) are the user's
            os.chdir(cwd)
    if _FORKS[0] != forks:
        raise ImportAborted("forked the process (os.fork) while being imported: a copy of "
                             "gpubench would run on from it; start processes from a variant's "
                             "code, or with subprocess")


# os.fork() calls in this process: an import that made one is refused (guarded_import).
_FORKS = [0]
os.register_at_fork(after_in_parent=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))

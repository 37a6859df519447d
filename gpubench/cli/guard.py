"""The command line's guard: every command body runs under `guarded`, which turns gpubench's
errors into one line and an exit code, stops on SIGTERM/SIGHUP as on Ctrl-C, and kills
whatever the command left below it; and the console every command prints with."""

from __future__ import annotations

import os
import signal
import sys

from rich.console import Console
from rich.markup import escape

from gpubench import errors, safe_text
from gpubench.run.lanes.processes import become_subreaper, kill_tree


def guarded(action) -> None:
    """Run a command body; gpubench errors become one line and an exit code. SIGTERM and
    SIGHUP stop it as Ctrl-C does (results so far written, workers killed); after the
    first, later ones are ignored, so a second Ctrl-C cannot cut the clean-up short. As
    the subreaper of what it starts, whatever is left below it at the end is killed."""
    err = make_console(stderr=True)
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup`, a shell's `&`: kept
            signal.signal(signum, _raise_stopped)
    become_subreaper()
    try:
        code = action()
    except errors.GpubenchError as exc:
        # the message may quote the user's text (a spec's error, a folder's name)
        err.print(f"[bold red]error:[/] {escape(safe_text.terminal(exc))}", markup=True,
                  soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        err.print(safe_text.terminal(exc) or "interrupted", markup=False)
        sys.exit(errors.interruption_code(exc))
    finally:
        kill_tree(os.getpid())
    sys.exit(code or 0)


# Signals that stop a command; SIGINT raises KeyboardInterrupt, the others Terminated.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_stopped(signum, frame) -> None:
    # Once: a second signal during the clean-up must not interrupt the clean-up.
    for other in STOP_SIGNALS:
        signal.signal(other, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise errors.Terminated(signum)


def make_console(stderr: bool = False) -> Console:
    """A console for tables; 120 columns when writing to a file or pipe (CI logs, tee),
    where rich would otherwise assume 80 and fold every table. No emoji codes: user text
    (a `file.py:100:` in an error, a family's description) is shown as written, where rich
    would print `file.py` and an emoji."""
    console = Console(stderr=stderr, highlight=False, emoji=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, highlight=False, emoji=False, width=120)
    return console

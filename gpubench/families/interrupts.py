"""Telling a real Ctrl-C from spec code that raises KeyboardInterrupt.

Both arrive as KeyboardInterrupt. A user's Ctrl-C must stop gpubench (exit 130, results
so far saved); a spec that raises it itself is a broken spec (exit 4, its file named), or
a broken point. Only a SIGINT that actually arrived while the spec's code ran makes it
the user's.
"""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def sigint_watch():
    """Yields `pressed()`: whether a SIGINT arrived inside the block. The previous handler
    still acts on it (Python's default raises KeyboardInterrupt as before). Off the main
    thread no handler can be installed: every KeyboardInterrupt then counts as real."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or threading.current_thread() is not threading.main_thread():
        yield lambda: True  # a handler not set from Python, or not ours to replace
        return
    arrived = []

    def note(signum, frame):
        arrived.append(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            raise KeyboardInterrupt

    if previous == signal.SIG_IGN:  # ignored (a background job): no Ctrl-C can arrive
        yield lambda: False
        return
    signal.signal(signal.SIGINT, note)
    try:
        yield lambda: bool(arrived)
    finally:
        signal.signal(signal.SIGINT, previous)

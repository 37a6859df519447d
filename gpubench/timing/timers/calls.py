"""TimedCalls: what a timer calls, with a hook on each side of the timed window.

A timer times `calls()`; right before each call, outside the window (before the
flush and the spin), it runs `calls.before()`, and right after the window's end
event `calls.after()`. The harness's implementation (gpubench/run/worker/rotation.py)
uses them to make every timed call look like the checked one: the next of
several input sets, its output poisoned, and a copy of the output kept for a
re-check when this call is one of the randomly chosen. Warm-up calls run the
same three steps, so a variant cannot tell warm-up from timing either.

A bare callable (gpubench.measure, the ceilings' probes) is wrapped in
PlainCalls, whose hooks do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class TimedCalls(Protocol):
    def before(self) -> None:
        """Outside the window, before the flush: choose and prepare the next call."""

    def __call__(self) -> object:
        """The timed call."""

    def after(self) -> None:
        """Outside the window, after its end event: keep what the re-check needs."""

    def sampling(self) -> None:
        """The samples begin: every call from here on is one sample, in call order (warm-up
        and calibration calls came before). A timer that takes one sample per call says
        so; the harness then times some calls on never-seen inputs inside the loop."""

    def keep_outputs(self, capturing: bool) -> None:
        """While a CUDA graph is captured, keep references to the outputs (read after the
        last replay) instead of copying them: a copy would be captured into the graph."""

    def capture_fresh(self, on: bool) -> int:
        """While on, each call goes to inputs the variant has never seen, one set a call:
        a graph timer captures such calls beside its timed graph, to time the variant on
        them. Returns how many such sets are left (0: the timer captures none)."""


class PlainCalls:
    """A bare callable as TimedCalls: nothing before, nothing after."""

    def __init__(self, fn: Callable[[], object]):
        self.fn = fn

    def before(self) -> None:
        pass

    def __call__(self) -> object:
        return self.fn()

    def after(self) -> None:
        pass

    def sampling(self) -> None:
        pass

    def keep_outputs(self, capturing: bool) -> None:
        pass

    def capture_fresh(self, on: bool) -> int:
        return 0


def as_calls(fn: Callable[[], object] | TimedCalls) -> TimedCalls:
    """`fn` itself when it has the hooks, else wrapped in PlainCalls."""
    return fn if isinstance(fn, TimedCalls) else PlainCalls(fn)


def once(calls: TimedCalls) -> Callable[[], None]:
    """One whole call, hooks included: what warm-up runs."""

    def call() -> None:
        calls.before()
        calls()
        calls.after()

    return call

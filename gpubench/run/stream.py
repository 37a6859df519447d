"""One run's event stream: the runner and the passes emit into it, the views and the
writers subscribe to it.

It exists before the runner does, so that the pipeline gets its `emit` when it is built
(run/pipeline.py's RunContext) and nothing replaces a context later. It also keeps the
run's latest facts (the last RunFacts), which a pass reads: `--baseline` compares the
run's device with the baseline's.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.records import events as E


class EventStream:
    """Listeners called in the order they subscribed, on the emitting (main) thread."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[E.Event], None]] = []
        self.env: dict = {}  # the last RunFacts: the run's env as the runner knows it

    def subscribe(self, listener: Callable[[E.Event], None]) -> None:
        """`listener(event)` for every event from now on, after those subscribed before."""
        self.listeners.append(listener)

    def emit(self, event: E.Event) -> None:
        if isinstance(event, E.RunFacts):
            self.env = event.env
        for listener in self.listeners:
            listener(event)

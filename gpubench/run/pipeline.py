"""Passes: the features that act on each finished group before it is shown and saved.

A run's groups go through one ordered list of passes (commands/run.py registers
them: baseline comparison, sanitizer marks, ncu-check, the ncu summary, ...). Each
pass is one feature, in the module where that feature lives; it returns new results
(its value as an Extra, records/extras.py) and never prints: what it has to say is a
Message event (ctx.say), printed by the console's listener in its turn. The runner
applies the pipeline; nothing else replaces results.

  name                        the flag it serves, for messages and tests
  enabled(request) -> bool    whether this run asked for it
  before_run(ctx)             optional: work before anything is timed (--sanitize)
  apply(group, ctx) -> group  the group's results, new ones where it added something
  after_table                 True: runs after the group's table is shown (--ncu's own
                              table follows the results'), still before it is saved
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import RenderableType

from gpubench.families.spec import Machine
from gpubench.records import result as R
from gpubench.records.events import Message
from gpubench.records.run import RunDocument
from gpubench.run.plan import Point
from gpubench.run.stream import EventStream


class Pass(Protocol):
    name: str
    after_table: bool

    def enabled(self, request: Any) -> bool: ...  # the command's options (RunRequest)

    def apply(self, group: list[R.Result], ctx: RunContext) -> list[R.Result]: ...


@dataclass
class RunContext:
    """What a pass may read of its run, and its one way to speak: the run's event stream,
    given when the context is made (the runner emits into the same stream)."""

    machine: Machine
    run_dir: Path
    points: list[Point]  # the planned points, in plan order
    meta: dict  # the run document's meta so far
    baseline: RunDocument | None = None  # --baseline's run
    stream: EventStream = field(default_factory=EventStream)

    def env(self) -> dict:
        """The run's env (the first worker's facts) as the runner last reported it."""
        return self.stream.env

    def say(self, text: str | RenderableType, soft_wrap: bool = False) -> None:
        self.stream.emit(Message(text, soft_wrap))


@dataclass
class Pipeline:
    """The passes a run asked for, in their registered order, with their context."""

    passes: list = field(default_factory=list)
    context: RunContext | None = None

    @classmethod
    def of(cls, registered: Iterable[Callable[[], Pass]], request: object,
           context: RunContext) -> Pipeline:
        """One fresh pass of each registered kind that `request` (the command's options)
        enables."""
        chosen = [p for p in (make() for make in registered) if p.enabled(request)]
        return cls(chosen, context)

    def before_run(self) -> None:
        for each in self.passes:
            hook = getattr(each, "before_run", None)
            if hook is not None:
                hook(self.context)

    def before_table(self, group: list[R.Result]) -> list[R.Result]:
        return self._apply(group, after_table=False)

    def after_table(self, group: list[R.Result]) -> list[R.Result]:
        return self._apply(group, after_table=True)

    def _apply(self, group: list[R.Result], after_table: bool) -> list[R.Result]:
        for each in self.passes:
            if bool(getattr(each, "after_table", False)) == after_table:
                group = each.apply(group, self.context)
        return group

"""The object behind every command module's `execute(request, console)`.

cli/app.py builds a request and calls the module's `execute`; the module's command class
holds that request and the console for the methods that do the work. The holding and the
entry are written once here, so a command module states only what its command does.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Generic, TypeVar

from rich.console import Console

RequestT = TypeVar("RequestT")


@dataclass(eq=False)
class Command(Generic[RequestT]):
    """One invocation of a command: what it was asked, and where it speaks.

    A module binds its entry as `execute = XCommand.entry`: the function cli/app.py calls,
    with the same `(request, console)` signature as every other command module's."""

    request: RequestT
    console: Console

    @classmethod
    def entry(cls, request: RequestT, console: Console) -> int:
        """The command's one entry: the exit code of one invocation."""
        return cls(request, console).execute()

    def execute(self) -> int:
        raise NotImplementedError


class JsonCommand(Command[RequestT]):
    """A command whose --json (`request.as_json`) makes stdout a document: its progress lines
    then go to stderr unwrapped, so a script reading stdout gets the JSON alone."""

    def _say(self, text: str) -> None:
        if self.request.as_json:
            print(text, file=sys.stderr)
        else:
            # Wrapped at spaces to the terminal (a path longer than a line is folded).
            self.console.print(text, markup=False)

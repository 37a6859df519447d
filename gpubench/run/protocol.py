"""What the parent and a worker process say to each other: JSON, one object per line.

Tasks go to the worker on its stdin, each in an Envelope with a fresh secret;
messages come back on a dedicated pipe, so that whatever a kernel, a compiler
or a library prints on stdout/stderr (which go to the worker's log file) can
never corrupt the protocol. The variant runs inside the worker and could write
on that pipe too (by accident, or to forge a PASS): every message therefore
carries the task's id and secret, which the variant never sees (it arrived on
stdin, which gpubench has already read), and the worker keeps the pipe on a
descriptor that child processes do not inherit. A line without the right
secret, or that is not JSON, is reported by the parent as the variant's fault.
This stops accidents and naive forgeries; it is not a sandbox: code running in
the worker could still read the secret out of the worker's memory.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field

from gpubench.records.point import Task

__all__ = ["Envelope", "LineReader", "Task", "private_channel", "read_result", "send"]

# A message that is not JSON: the reader hands it on as this type, for the parent to judge.
GARBAGE = "garbage"


@dataclass(frozen=True)
class Envelope:
    """A task as sent to a worker, with the secret its messages must carry."""

    task: Task
    secret: str = field(default_factory=lambda: secrets.token_hex(16))

    def to_json(self) -> str:
        return json.dumps({"secret": self.secret, "task": self.task.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> Envelope:
        data = json.loads(text)
        return cls(Task.from_dict(data["task"]), data["secret"])

    def send(self, fd: int, message: dict) -> None:
        """Send a message of this task (worker side)."""
        send(fd, {**message, "task": self.task.id, "auth": self.secret})

    def vouches_for(self, message: dict) -> bool:
        """Whether `message` came from gpubench's worker code for this task (parent side)."""
        return message.get("task") == self.task.id and message.get("auth") == self.secret


def private_channel(fd: int) -> int:
    """Move the message pipe to a new descriptor that child processes do not inherit
    (os.dup's default), and close the one named on the command line."""
    private = os.dup(fd)
    os.close(fd)
    return private


def read_result(path) -> dict:
    """A one-shot worker's result file ({} when the worker died before writing it)."""
    from pathlib import Path

    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def send(fd: int, message: dict) -> None:
    """Write one message; a single write of a line keeps messages whole."""
    data = (json.dumps(message, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class LineReader:
    """Reads newline-delimited JSON from a file descriptor, a whole message at a time."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""
        self.closed = False

    def pop(self) -> dict | None:
        """The next complete message already buffered, or None. A line that is not a JSON
        object comes back as {"type": "garbage", "text": ...}, never as an exception."""
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            return {"type": GARBAGE, "text": line[:200].decode(errors="replace")}
        return message

    def feed(self) -> None:
        """Read what is available (call after select says the fd is readable)."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.closed = True
        self.buffer += chunk

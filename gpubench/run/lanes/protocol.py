"""What the parent and a worker process say to each other: JSON, one object per line.

Tasks go to the worker on its stdin, each in an Envelope with a fresh secret;
messages come back on a dedicated pipe, so that whatever a kernel, a compiler
or a library prints on stdout/stderr (which go to the worker's log file) can
never corrupt the protocol. The worker keeps the pipe on a descriptor that
child processes do not inherit.

The variant runs inside the worker and can reach anything there: the pipe, and
the envelope's secret by walking up the stack. So the secret only vouches for
progress messages ("phase", which drive the timeouts, and "done"); no secret that
authenticates a result exists in the worker while variant code runs:

    parent -> worker   {"task": ..., "secret": S}           (stdin)
    worker -> parent   {"type": "phase", ..., auth S}       (while it builds, checks, times)
    worker -> parent   {"type": "done", auth S}             (variant code has returned,
                                                              the seal and threads checked)
    parent -> worker   {"task": id, "key": K}               (a one-time ResultKey, stdin)
    worker -> parent   {"type": "result", "key": K, ...}

A result before the key was sent, or without it, is foreign and blames the task.
A worker that finds the process tampered with (gpubench/run/worker/tamper.py) says
{"type": "tampered", auth S} instead of "done": a FAIL, which needs no key
(forging it only fails one's own task), and the worker exits.

Limit: a variant that plays the whole exchange itself (sends "done", reads the
key from stdin before the worker does, writes the result) is not stopped here;
the worker's own "done" then arrives during the next task, and the parent reports
the previous task's result as forged on that task (gpubench/run/lanes/lane.py).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import time
from dataclasses import dataclass, field

from gpubench.records.point import Task

__all__ = ["Envelope", "LineReader", "ResultKey", "Task", "private_channel", "read_result",
           "send"]

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
        """Whether `message` carries this task's secret (parent side): a progress message
        of this task. It proves nothing about a result (see the module's docstring)."""
        return message.get("task") == self.task.id and message.get("auth") == self.secret


@dataclass(frozen=True)
class ResultKey:
    """The one-time key a task's result must carry: sent only after the worker said
    "done", so it never exists in the worker while variant code runs."""

    task_id: int
    key: str = field(default_factory=lambda: secrets.token_hex(16))

    def to_json(self) -> str:
        return json.dumps({"task": self.task_id, "key": self.key})

    @staticmethod
    def read(text: str, task_id: int) -> str | None:
        """The key in a line from the parent, or None when the line is not this task's key
        (something else read the key first and the parent moved on)."""
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("task") != task_id or "key" not in data:
            return None
        return str(data["key"])

    def opens(self, message: dict) -> bool:
        """Whether `message` is this task's result, sent with this key (parent side)."""
        return message.get("task") == self.task_id and message.get("key") == self.key


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

    def wait(self, deadline: float) -> dict | None:
        """The next message, reading as it comes until `deadline` (time.monotonic()); None
        when the other end closed (`closed`) or the deadline passed first."""
        while (message := self.pop()) is None and not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(remaining, 1.0))
            if ready:
                self.feed()
        return message

    def feed(self) -> None:
        """Read what is available (call after select says the fd is readable)."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.closed = True
        self.buffer += chunk

"""What the parent and a worker process say to each other: JSON, one object per line.

Tasks go to the worker on its stdin; messages come back on a dedicated pipe,
so that whatever a kernel, a compiler or a library prints on stdout/stderr
(which go to the worker's log file) can never corrupt the protocol.
"""

from __future__ import annotations

import json
import os

from gpubench.records.point import Task

__all__ = ["LineReader", "Task", "read_result", "send"]


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
        """The next complete message already buffered, or None."""
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def feed(self) -> None:
        """Read what is available (call after select says the fd is readable)."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.closed = True
        self.buffer += chunk

"""Where an import of a user's file failed: the line of that file, for the message."""

from __future__ import annotations

import traceback
from pathlib import Path


def where_in_file(exc: BaseException, path: Path) -> str:
    """'line 12: NameError: name 'x' is not defined' — the innermost frame in `path`."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            line = frame.lineno
    message = str(exc).splitlines()[0] if str(exc) else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"line {line}: {text}" if line else text

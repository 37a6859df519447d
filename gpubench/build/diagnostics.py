"""Compiler errors the user can act on: each source starts with a `#line` directive naming
its own file (or, for a source given as text, its label), and the compiler's output is cut
down to its first errors as `file:line: message`, gcc and nvcc alike. Without the directive
an error would point into load_inline's concatenated main.cpp."""

from __future__ import annotations

import os
import re
from pathlib import Path


class CompileError(Exception):
    """A build that failed; `summary` holds the compiler's first errors with file:line."""

    def __init__(self, summary: str, log_path: Path | None = None, seconds: float = 0.0):
        super().__init__(summary)
        self.summary = summary
        self.log_path = log_path
        self.seconds = seconds  # time the failed build took


def with_line_directive(path: Path) -> str:
    """The file's text, prefixed so that diagnostics point at the file itself."""
    return line_directive(str(path), path.read_text())


def line_directive(name: str, text: str) -> str:
    """`text` prefixed with `#line 1 "<name>"`, so diagnostics name its origin."""
    return f'#line 1 "{c_string_body(name)}"\n{text}'


def c_string_body(text: str) -> str:
    """`text` escaped for a C string literal: a folder named `it's "x"\\y` must not end
    the `#line` file name early. Control characters become octal escapes."""
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return "".join(out)


# The file part is lazy and may hold ': ' and spaces: a label like "spec.py: cuda_sources[0]"
# is a file name to the compiler (#line).
# gcc and clang: "file:line:col: error: msg" ("fatal error" for a missing header); an error
# in a header names the header (after "In file included from x.cpp:3:", which is no error).
_GCC_ERROR = re.compile(
    r"^(?P<file>\S.*?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$"
)
# nvcc's front end: "file(line): error: msg", "error #20-D:" with diagnostic numbers on,
# "catastrophic error:" for a missing header.
_NVCC_ERROR = re.compile(
    r"^(?P<file>\S.*?)\((?P<line>\d+)\): (?:catastrophic )?error(?: #[\w-]+)?: (?P<msg>.*)$"
)
_LINK_ERROR = re.compile(r"(undefined reference to .*|ld returned .*|undefined symbol: .*)")


def summarize_compiler_output(output: str, limit: int = 3) -> list[str]:
    """The first `limit` errors as 'file:line: message', gcc and nvcc formats alike."""
    found: list[str] = []
    for line in output.splitlines():
        match = _GCC_ERROR.match(line.strip()) or _NVCC_ERROR.match(line.strip())
        if match:
            entry = f"{display_path(match['file'])}:{match['line']}: {match['msg'].strip()}"
        else:
            link = _LINK_ERROR.search(line)
            if not link:
                continue
            entry = f"link error: {link.group(1).strip()}"
        if entry not in found:
            found.append(entry)
        if len(found) >= limit:
            break
    return found


def display_path(path: str, cwd: str | None = None) -> str:
    """Relative to the working folder (`cwd`, default this process's) when below it, else
    as given: how compiler errors and error sites (records/error_site.py) name files."""
    cwd = os.getcwd() if cwd is None else cwd
    if os.path.isabs(path) and path.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(path, cwd)
    return path

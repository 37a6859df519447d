"""Where a variant went wrong, in the user's own source: `file:line`, that line, and the
whole story (traceback or compiler log) for `--verbose` and results.json.

A Python traceback of a failed variant is mostly gpubench's, torch's and Triton's frames;
the line a user can fix is the innermost frame in their family's folder. Triton hides it
twice: the interpreter (TRITON_INTERPRET=1) re-raises the kernel's error as an
InterpreterError `from` the original, whose traceback holds the kernel's frame; a GPU
compile error (CompilationError) carries the kernel function's source text and a line
number within it, not the file's. A C++ TORCH_CHECK that crosses the pybind11 binding
names its file and line only in c10's "Exception raised from F at FILE:LINE" line (which
c10 adds when TORCH_SHOW_CPP_STACKTRACES is set, as gpubench's workers set it). Compiler
output is read by build/diagnostics.py; its first "file:line: message" is parsed here.

Pure: no terminal, GPU or subprocess; source lines are read through linecache.
"""

from __future__ import annotations

import linecache
import os
import re
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpubench.build.diagnostics import display_path
from gpubench.codec import Record

# What results.json keeps of a traceback or compiler log: a torch build's log can run to
# megabytes of template noise; the first errors are in the first few KB, and 64 KB holds
# ~800 lines, any Python traceback in full.
DETAIL_LIMIT = 64_000

# c10's source location of a C++ error (TORCH_CHECK), when stack traces are on.
_CPP_RAISED = re.compile(r"Exception raised from \S+ at (?P<file>.+?):(?P<line>\d+) ")
# "file:line: message", as build/diagnostics.py writes each compiler error (a label such as
# "spec.py: cuda_sources[0]" may hold ': ', hence the lazy file part).
_SITE_FIRST = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+): (?P<msg>.*)$")
# Triton's CompilationError text starts with "at LINE:COL:" (within the kernel's source).
_TRITON_AT = re.compile(r"^at \d+:\d+:$")


@dataclass(frozen=True)
class ErrorSite:
    """A line of the user's source: as shown (relative to the working folder when below
    it) and its text, stripped ('' when unreadable, e.g. a source given as a string)."""

    file: str
    line: int
    source: str = ""

    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ErrorReport:
    """A failure as shown and kept. `message` is what Result.error says, site first
    ('helpers.py:12: ValueError: bad axis'); `log` the whole traceback or compiler log."""

    message: str
    site: ErrorSite | None = None
    log: str = ""

    def evidence(self) -> SiteEvidence:
        """What a worker sends and results.json keeps of it (the log capped)."""
        site = self.site
        return SiteEvidence(site.file if site else None, site.line if site else None,
                            site.source if site else None, self.log[:DETAIL_LIMIT])


@dataclass(frozen=True)
class SiteEvidence(Record):
    """An error's site and its whole log, as the worker sends it and the `error_site`
    extra keeps it (records/features/error_site.py); None where no site is known."""

    file: str | None = None
    line: int | None = None
    source: str | None = None
    log: str = ""


def with_site(message: str, site: ErrorSite | None) -> str:
    """'file:line: message', or the message alone without a site."""
    return f"{site.location()}: {message}" if site else message


def source_block(site: ErrorSite | None, indent: str = "    ") -> str:
    """The site's line of source, indented, to print under the message ('' without one)."""
    return f"{indent}{site.source}" if site and site.source else ""


# ------------------------------------------------------------------ Python exceptions


def report_exception(exc: BaseException, roots: Iterable[Path], cwd: str | None = None
                     ) -> ErrorReport:
    """The site of `exc` in the user's files under `roots` (the family's folder), the
    message of the exception that happened there, and the whole traceback."""
    roots = [Path(os.path.realpath(root)) for root in roots]
    cwd = cwd or os.getcwd()
    log = "".join(traceback.format_exception(exc))
    for cause in reversed(chain(exc)):  # innermost first: where it really went wrong
        found = _site_in(cause, roots)
        if found is not None:
            file, line = found
            return ErrorReport(message_of(cause), _site(file, line, cwd), log)
    return ErrorReport(message_of(exc), None, log)


def chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from or during, outermost first (cycles cut)."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in found):
        found.append(current)
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)
    return found


def _site_in(exc: BaseException, roots: list[Path]) -> tuple[str, int] | None:
    """Where `exc` happened in the user's files: a Triton compile error's kernel line, a
    C++ error's TORCH_CHECK, else its innermost frame under `roots`."""
    compiled = triton_compile_site(exc, roots)
    if compiled is not None:
        return compiled
    cpp = cpp_site(str(exc), roots)
    if cpp is not None:
        return cpp
    frame = user_frame(traceback.extract_tb(exc.__traceback__), roots)
    return (frame.filename, frame.lineno) if frame is not None else None


def user_frame(frames: Iterable[traceback.FrameSummary], roots: list[Path]
               ) -> traceback.FrameSummary | None:
    """The innermost frame whose file lies under one of `roots`."""
    found = None
    for frame in frames:
        if frame.lineno is not None and is_under(frame.filename, roots):
            found = frame
    return found


def is_under(file: str, roots: list[Path]) -> bool:
    """Whether `file` (resolved) lies in one of `roots` (already resolved)."""
    if not file or file.startswith("<"):
        return False
    path = Path(os.path.realpath(file))
    return any(path.is_relative_to(root) for root in roots)


def cpp_site(text: str, roots: list[Path]) -> tuple[str, int] | None:
    """c10's 'Exception raised from F at FILE:LINE' when FILE is the user's."""
    match = _CPP_RAISED.search(text)
    if match and is_under(match["file"], roots):
        return match["file"], int(match["line"])
    return None


def triton_compile_site(exc: BaseException, roots: list[Path]) -> tuple[str, int] | None:
    """A Triton CompilationError's line in its file: it carries the kernel function's
    source (`src`, from its `def`) and the failing node's line within it; the file is the
    one under `roots` whose text holds that source."""
    src, node = getattr(exc, "src", None), getattr(exc, "node", None)
    lineno = getattr(node, "lineno", None)
    if not isinstance(src, str) or not src.strip() or not isinstance(lineno, int):
        return None
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            start = source_start(_read(path), src)
            if start is not None:
                return str(path), start + lineno - 1
    return None


def source_start(text: str, src: str) -> int | None:
    """The 1-based line of `text` where the function source `src` begins (its `def`
    line; indentation may differ, as Triton dedents), or None."""
    wanted = [line.strip() for line in src.strip("\n").splitlines()]
    lines = [line.strip() for line in text.splitlines()]
    for index, line in enumerate(lines):
        if line == wanted[0] and lines[index:index + len(wanted)] == wanted:
            return index + 1
    return None


def message_of(exc: BaseException) -> str:
    """'ValueError: bad axis': the exception's type and the first line of its text
    (a Triton compile error's own message, not its 'at 3:8:' source excerpt)."""
    text = getattr(exc, "error_message", None) if _is_triton_compile(exc) else None
    lines = [line for line in str(text or exc).splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    if _TRITON_AT.match(first):
        first = lines[-1].strip()
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _is_triton_compile(exc: BaseException) -> bool:
    return hasattr(exc, "src") and hasattr(exc, "node") and hasattr(exc, "error_message")


# ------------------------------------------------------------------ compiler output


def report_compile_error(summary: str, log: str = "", cwd: str | None = None) -> ErrorReport:
    """A failed build: its summary (build/diagnostics.py: 'file:line: message; ...') as the
    message, the first error's line as the site, the compiler log as the whole story."""
    match = _SITE_FIRST.match(summary.split("; ")[0])
    site = None
    if match:
        site = _site(match["file"], int(match["line"]), cwd or os.getcwd())
    return ErrorReport(summary, site, log)


def _site(file: str, line: int, cwd: str) -> ErrorSite:
    return ErrorSite(display_path(file, cwd), line, _source_line(file, line, cwd))


def _source_line(file: str, line: int, cwd: str) -> str:
    path = file if os.path.isabs(file) else os.path.join(cwd, file)
    return linecache.getline(path, line).strip()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def from_value(value: Mapping | None) -> ErrorReport | None:
    """The ErrorReport an `error_site` extra's value describes (message not kept there)."""
    if not value:
        return None
    site = None
    if value.get("file") and value.get("line") is not None:
        site = ErrorSite(str(value["file"]), int(value["line"]), value.get("source") or "")
    return ErrorReport("", site, value.get("log") or "")

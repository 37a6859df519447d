"""Errors the user can cause, each with its own exit code.

Only the CLI turns these into a message and an exit status; everything below it
raises. An error message is one line that says what is wrong and, where there
is one, what to type instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# Exit codes. 1 is "the run finished but something failed" (a check, a crash),
# so scripts can tell a red benchmark from a bad command line.
EXIT_OK = 0
EXIT_VARIANT_FAILED = 1
EXIT_USAGE = 2  # click's own code for bad usage, reused for bad values
EXIT_CONFIG = 3
EXIT_SPEC = 4
EXIT_ENVIRONMENT = 5
# Profiler failures (gpubench ncu / nsys), one code each so scripts can react.
EXIT_TOOL_MISSING = 6  # ncu, nsys or compute-sanitizer not found
EXIT_PROFILER_PERMISSION = 7  # ERR_NVGPUCTRPERM: no access to the GPU's counters
EXIT_NO_KERNELS = 8  # the profiler saw no kernel in gpubench's range
EXIT_PROFILER_TIMEOUT = 9  # the profiler ran past --timeout and was killed
EXIT_SECTION_MISSING = 10  # the report lacks a section that was asked for
EXIT_PROFILER_FAILED = 11  # any other profiler failure
EXIT_OUTPUT = 12  # results or reports cannot be written (read-only, a file in the way, full)
# `compare --fail-on-regression`: a point SLOWER, or PASS -> SUSPECT/failed; BASE points
# missing in NEW; or no point compared (commands/compare.py's gate)
EXIT_REGRESSION = 13
EXIT_SANITIZER_FOUND = 14  # `gpubench sanitize`: compute-sanitizer found errors or hazards
EXIT_SUSPECT = 15  # `run`: nothing failed, but a row is SUSPECT (correct, untrustworthy time)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM: stopped by a signal; results so far are written


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: stop like Ctrl-C (write what was measured, kill every
    process started), but exit with 128 + the signal."""

    def __init__(self, signum: int):
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def interruption_code(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C, 128 + N for a termination signal."""
    return exc.exit_code if isinstance(exc, Terminated) else EXIT_INTERRUPTED


class GpubenchError(Exception):
    """Base class: a problem to report in one line, never with a traceback.

    Each kind names its exit code in its class line, `class X(GpubenchError, exit_code=N)`,
    so the code sits beside the kind rather than in a body every kind repeats; a kind that
    names none keeps its parent's."""

    exit_code = EXIT_USAGE

    def __init_subclass__(cls, exit_code: int | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code


class UsageError(GpubenchError, exit_code=EXIT_USAGE):
    """A bad value on the command line: unknown family, malformed size, ..."""


class ConfigError(GpubenchError, exit_code=EXIT_CONFIG):
    """A suite file that cannot be read; the message names the file and key."""


class SpecError(GpubenchError, exit_code=EXIT_SPEC):
    """A kernel family folder whose spec.py is missing, broken or inconsistent."""


class EnvironmentProblem(GpubenchError, exit_code=EXIT_ENVIRONMENT):
    """Something about this machine prevents the command (no CUDA, no tool)."""


class OutputError(GpubenchError, exit_code=EXIT_OUTPUT):
    """Files cannot be written where they must go; the message says where, and where
    anything already measured was saved instead."""


class BuildFailed(GpubenchError, exit_code=EXIT_VARIANT_FAILED):
    """A variant a tool was to run (ncu, nsys, compute-sanitizer) does not build: the
    compiler's first error at its file:line, not the tool's "returned an error code"."""


class ProfilerError(GpubenchError, exit_code=EXIT_PROFILER_FAILED):
    """An external profiler failed; the subclass (and its exit code) says how."""


class ToolMissing(ProfilerError, exit_code=EXIT_TOOL_MISSING):
    """ncu, nsys or compute-sanitizer is not on this machine (or not where --*-path says)."""


class ProfilerPermission(ProfilerError, exit_code=EXIT_PROFILER_PERMISSION):
    """The profiler may not read the GPU's counters (ERR_NVGPUCTRPERM)."""


class NoKernelsProfiled(ProfilerError, exit_code=EXIT_NO_KERNELS):
    """The profiler saw no kernel inside gpubench's range."""


class ProfilerTimeout(ProfilerError, exit_code=EXIT_PROFILER_TIMEOUT):
    """The profiler ran past --timeout and was killed."""


class SectionMissing(ProfilerError, exit_code=EXIT_SECTION_MISSING):
    """The report lacks a section that was asked for."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean: a, b?)' for close matches, or '' when nothing is close."""
    choices = list(choices)
    # Case first: axis names are short ('k' vs 'K'), where difflib's ratio sees no match.
    close = [c for c in choices if c.lower() == name.lower() and c != name]
    close = close or difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" (did you mean: {', '.join(close)}?)" if close else ""


def unknown_name(what: str, name: str, choices: Iterable[str]) -> UsageError:
    """The standard 'unknown X' error with suggestions and the full list."""
    choices = sorted(choices)
    hint = did_you_mean(name, choices)
    listing = ", ".join(choices) if choices else "none"
    return UsageError(f"unknown {what} '{name}'{hint}; known: {listing}")

"""What went wrong in an ncu run, read from its console text; and the hints that text lists. Pure.

ncu reports failure in its text, not its exit code: "No kernels were profiled" exits 0 (as a
==WARNING==, followed by the kernels it did see), and `==ERROR== ERR_NVGPUCTRPERM` (no
permission to read the GPU's counters) goes to stdout. So the driver must read the text, and
every problem here comes with a one-line message that says what to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from gpubench import errors
from gpubench.tools.ncu import rules as ncu_rules
from gpubench.tools.ncu.rules import RuleResult

PERMISSION_TOKEN = "ERR_NVGPUCTRPERM"
_ERROR_PREFIX = "==ERROR=="


class Problem(StrEnum):
    PERMISSION = "permission"  # ERR_NVGPUCTRPERM: the host restricts GPU counters to admins
    NO_KERNELS = "no_kernels"  # the kernel/NVTX filter matched nothing
    ERROR = "error"  # any other ==ERROR== line
    MISSING_SECTIONS = "missing_sections"  # the report lacks a section that was asked for


@dataclass(frozen=True)
class ConsoleProblem:
    kind: Problem
    message: str  # one line for the user: what is wrong and what to change
    details: tuple[str, ...] = ()  # available kernels, the ==ERROR== lines, missing section ids


def find_problems(text: str) -> list[ConsoleProblem]:
    """Every problem in one ncu console output, the permission problem first."""
    found = [permission_problem(text), no_kernels_problem(text), other_errors(text)]
    return [p for p in found if p is not None]


def permission_problem(text: str) -> ConsoleProblem | None:
    """ERR_NVGPUCTRPERM: the fix is on the host, not in gpubench."""
    lines = [line.strip() for line in text.splitlines() if PERMISSION_TOKEN in line]
    if not lines:
        return None
    return ConsoleProblem(
        Problem.PERMISSION,
        f"ncu may not read this GPU's performance counters ({PERMISSION_TOKEN}): on the host, "
        "set the nvidia kernel module option NVreg_RestrictProfilingToAdminUsers=0 (then reload "
        "the driver or reboot), or run ncu as root / with CAP_SYS_ADMIN",
        tuple(lines))


def profiling_restricted(driver_params: str) -> bool:
    """True when /proc/driver/nvidia/params says `RmProfilingAdminOnly: 1` (checked before ncu)."""
    match = re.search(r"^\s*RmProfilingAdminOnly:\s*(\d+)", driver_params, re.MULTILINE)
    return bool(match and int(match.group(1)))


def no_kernels_problem(text: str) -> ConsoleProblem | None:
    """"No kernels were profiled": the filter matched nothing; name the kernels ncu saw."""
    if "No kernels were profiled" not in text:
        return None
    kernels = available_kernels(text)
    seen = f"; kernels it saw: {', '.join(kernels)}" if kernels else ""
    return ConsoleProblem(
        Problem.NO_KERNELS,
        "ncu profiled no kernels: the kernel name or NVTX filter matched none of the "
        f"launches{seen}",
        tuple(kernels))


def available_kernels(text: str) -> list[str]:
    """The numbered list after 'Available Kernels:' (printed with "No kernels were profiled")."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Available Kernels:"), None)
    if start is None:
        return []
    kernels = []
    for line in lines[start + 1:]:
        match = re.match(r"^\s*\d+\.\s+(.+?)\s*$", line)
        if match is None:
            break
        kernels.append(match.group(1))
    return kernels


def error_lines(text: str) -> list[str]:
    """The text of each ==ERROR== line, prefix removed."""
    return [line.split(_ERROR_PREFIX, 1)[1].strip() for line in text.splitlines()
            if _ERROR_PREFIX in line]


def other_errors(text: str) -> ConsoleProblem | None:
    """==ERROR== lines other than the permission one, quoted (the first in the message)."""
    errors = [line for line in error_lines(text) if PERMISSION_TOKEN not in line]
    if not errors:
        return None
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ConsoleProblem(Problem.ERROR, f"ncu reported an error: {errors[0]}{more}",
                          tuple(errors))


def missing_sections(requested: Iterable[str], found: Iterable[str]) -> ConsoleProblem | None:
    """The requested section ids a report lacks (e.g. `profile.sections`), or None.

    ncu names a section it cannot collect only in its text, and may leave it out of the report;
    `regex:` requests cannot be checked this way and are ignored. Case does not matter.
    """
    have = {name.casefold() for name in found}
    missing = [s for s in requested if not s.startswith("regex:") and s.casefold() not in have]
    if not missing:
        return None
    return ConsoleProblem(
        Problem.MISSING_SECTIONS,
        f"the ncu report lacks requested section(s) {', '.join(missing)}: check the names with "
        "`ncu --list-sections`, or use a --set that includes them",
        tuple(missing))


# --- hints in `ncu --page details` / console text --------------------------------------------


@dataclass(frozen=True)
class ConsoleKernel:
    """One kernel block of ncu's details text, with the hints listed under its sections."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    rules: tuple[RuleResult, ...]


_KERNEL = re.compile(r"^\s+(?P<name>\S.*?) "
                     r"\((?P<grid>\d+, \d+, \d+)\)x\((?P<block>\d+, \d+, \d+)\)")
_SECTION = re.compile(r"^\s+Section: (?P<name>.+?)\s*$")
_HINT = re.compile(r"^\s+(?P<type>OPT|WRN|INF|ERROR|ERR)\s+(?P<text>\S.*?)\s*$")
_CONTINUATION = re.compile(r"^\s{6,}\S")
_SEPARATOR = re.compile(r"^\s*-{3,}(\s+-+)*\s*$")
_SPEEDUP = re.compile(r"^Est\. (?P<local>Local )?Speedup: (?P<pct>[\d.,]+)%\s*")


def parse_details_hints(text: str) -> list[ConsoleKernel]:
    """The OPT/WRN/INF hints of `ncu --page details` (or a console run), kernel by kernel.

    A hint is its type word, an optional `Est. Speedup: X%` / `Est. Local Speedup: X%`, and a
    message wrapped over indented lines; a blank or `-----` line ends it. The text carries no
    rule ids, so `rule_id` is '' and `section_name` is the section's display name.
    """
    kernels: list[_Draft] = []
    hint: list[str] | None = None  # the lines of the hint being read
    for line in text.splitlines():
        if hint is not None and _continues(line):
            hint.append(line.strip())
            continue
        hint = None
        if (match := _KERNEL.match(line)) is not None:
            kernels.append(_Draft(match["name"], _triple(match["grid"]), _triple(match["block"])))
        elif not kernels:
            continue
        elif (match := _SECTION.match(line)) is not None:
            kernels[-1].section = match["name"]
        elif (match := _HINT.match(line)) is not None:
            hint = [match["text"]]
            kernels[-1].hints.append((match["type"], kernels[-1].section, hint))
    return [ConsoleKernel(k.name, k.grid, k.block,
                          tuple(_hint_rule(*h) for h in k.hints)) for k in kernels]


@dataclass
class _Draft:
    """A kernel block while it is being read: its hints as (type, section, lines)."""

    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    section: str = ""
    hints: list[tuple[str, str, list[str]]] = field(default_factory=list)


def _continues(line: str) -> bool:
    return bool(_CONTINUATION.match(line)) and not (
        _SEPARATOR.match(line) or _SECTION.match(line) or _HINT.match(line))


def _hint_rule(kind: str, section: str, lines: list[str]) -> RuleResult:
    text = " ".join(lines)
    speedup_type, speedup = None, None
    if (match := _SPEEDUP.match(text)) is not None:
        speedup_type = ncu_rules.LOCAL if match["local"] else ncu_rules.GLOBAL
        speedup = float(match["pct"].replace(",", ""))
        text = text[match.end():]
    return RuleResult(rule_id="", section_id="", name="", title="",
                      type=ncu_rules.ERROR if kind == "ERR" else kind,
                      message=ncu_rules.clean_message(text), raw_message=text,
                      speedup_type=speedup_type, estimated_speedup_pct=speedup,
                      section_name=section)


def _triple(text: str) -> tuple[int, int, int]:
    x, y, z = (int(part) for part in text.split(","))
    return (x, y, z)


def raise_console_problems(text: str, log: Path) -> None:
    """The first problem ncu's console output shows, as the error gpubench exits with."""
    for problem in find_problems(text):
        if problem.kind == Problem.PERMISSION:
            raise errors.ProfilerPermission(problem.message)
        if problem.kind == Problem.NO_KERNELS:
            raise errors.NoKernelsProfiled(f"{problem.message} (log: {log})")
        raise errors.ProfilerError(f"{problem.message} (log: {log})")

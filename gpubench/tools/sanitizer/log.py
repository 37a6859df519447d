"""Reading NVIDIA compute-sanitizer's output: findings, their counts, and the user's source line.

Pure: takes the text of an `--xml --save FILE` file or of the console output, gives data.
Running the tool is gpubench/commands' business.

The four tools write differently shaped records (seen with compute-sanitizer 2025.3.1,
tests/fixtures/sanitizer/):
  memcheck   <record><kind>Precise</kind> <who> thread/block, <what> text, space, size,
             direction, error, address, <where> func/path/line/pc
  initcheck  the same, but <what> holds only text, address and size
  racecheck  <record><kind>Analysis</kind> <what> text, <source> and <destination>, each a
             direction and a <where>; the destination holds the hazard count. No thread.
  Api        (any tool) a failed CUDA call, e.g. the cudaErrorLaunchFailure that follows an
             out-of-bounds write: not a finding of its own, kept as a note.
Records without `-lineinfo` have a <where> without path and line: the pc still tells where.

A tool killed on its timeout leaves a file cut anywhere, often inside a record: the complete
records are read and the log says it was cut, so nobody takes it for the whole story.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

Dim3 = tuple[int, int, int]

# <what> leaves that are a field of their own, not a detail (a race's <source> and
# <destination> hold children: they become its accesses).
_NOT_DETAILS = {"text"}
# racecheck's hazard class from the two accesses, in the order the tool names them (source,
# destination): the first is the earlier in the kernel's code, as in the recorded race
# (write at line 18, read at line 19).
_HAZARDS = {("write", "read"): "RAW", ("read", "write"): "WAR", ("write", "write"): "WAW"}
# 'Uninitialized __global__ memory read of size 4 bytes', 'Invalid __shared__ write of size
# 4 bytes': what went wrong, the memory space and the access, whatever follows.
_ACCESS_TEXT = re.compile(r"^(?P<what>\w+) __(?P<space>\w+?)__ (?:memory )?(?P<access>\w+)\b")
# Where a message stops naming the class of the problem and starts giving this record's
# particulars (size, address, punctuation).
_PARTICULARS = re.compile(r" of size \d+| at 0x[0-9a-fA-F]+|[.:(]")
# The console's totals, one line per sanitized process: 'ERROR SUMMARY: 3 errors' (not the
# 'ERROR SUMMARY: 65436 errors were not printed' line after it), and racecheck's 'RACECHECK
# SUMMARY: 1 hazard displayed (1 error, 0 warnings)'. After whatever prefix the lines carry
# ('========= ' unless --prefix changed it).
_ERROR_SUMMARY = re.compile(r"(?:^|\s)ERROR SUMMARY: (\d+) errors?\s*$", re.MULTILINE)
_RACECHECK_SUMMARY = re.compile(r"(?:^|\s)RACECHECK SUMMARY: (\d+) hazards? displayed",
                                re.MULTILINE)


@dataclass(frozen=True)
class Access:
    """One side of a racecheck hazard: what it did and where."""

    direction: str  # 'write', 'read' (lower case, as memcheck writes it)
    kernel: str | None
    file: str | None
    line: int | None
    pc: str | None = None


@dataclass(frozen=True)
class Finding:
    """One problem the sanitizer reported, or several folded into one (see summarize).

    `kind` is a short class built from the record ('out-of-bounds global write',
    'uninitialized global read', 'shared-memory race (RAW)'), so that folding by kind keeps
    different problems on one line apart. `count` is how many occurrences it stands for: one
    per record, or the record's own count where the tool already folded (racecheck's
    '[1024 hazards]'). `thread` and `block` are a sample: the first record's."""

    tool: str
    kind: str
    kernel: str | None
    file: str | None  # as the tool names it: the #line name, or the compiled file's path
    line: int | None  # None without -lineinfo
    count: int = 1
    thread: Dim3 | None = None
    block: Dim3 | None = None
    message: str = ""  # the tool's own text for the record
    pc: str | None = None  # offset in the kernel: the only location without -lineinfo
    # (name, value) in the tool's order: space, size, direction, error, address..., and for a
    # race its hazard class; whatever the record gives, nothing invented.
    details: tuple[tuple[str, str], ...] = ()
    accesses: tuple[Access, ...] = ()  # a race's two sides; empty otherwise

    def detail(self, name: str) -> str | None:
        """A detail's value by name ('size', 'address', 'hazard'); None where not given."""
        return dict(self.details).get(name)


@dataclass(frozen=True)
class SanitizerLog:
    """What one tool's XML file says: its findings in file order (one per record), the failed
    CUDA calls it saw, and whether the file was cut (the tool killed before it finished)."""

    tool: str
    findings: tuple[Finding, ...]
    api_errors: tuple[str, ...] = ()
    cut: bool = False


@dataclass(frozen=True)
class VariantReport:
    """Everything the sanitize view shows for one variant: one log per tool that ran, and the
    texts of its sources by the name its build gave them (see source_line)."""

    variant: str
    logs: tuple[SanitizerLog, ...]
    sources: Mapping[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- XML


def parse_xml(text: str, tool: str) -> list[Finding]:
    """The findings of an `--xml --save FILE` file, one per record, in file order. The
    command wants read_xml, which also says whether the file was cut."""
    return list(read_xml(text, tool).findings)


def read_xml(text: str, tool: str) -> SanitizerLog:
    """Findings, failed CUDA calls and completeness of one tool's XML file."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r} (one of {', '.join(TOOLS)})")
    records, cut = _records(text)
    findings, api_errors = [], []
    for record in records:
        if _text(record, "kind") == "Api":
            api_errors.append(_text(record, "what/text") or "a CUDA API call failed")
        else:
            findings.append(_finding(record, tool))
    return SanitizerLog(tool, tuple(findings), tuple(api_errors), cut)


def _records(text: str) -> tuple[list[ET.Element], bool]:
    """The complete <record> elements under the root, and whether the document is cut (or
    broken) somewhere: a pull parser hands out what it read before the fault."""
    parser = ET.XMLPullParser(events=("start", "end"))
    records, depth, cut = [], 0, False
    try:
        parser.feed(text)
        parser.close()
    except ET.ParseError:
        cut = True
    try:
        for event, element in parser.read_events():
            depth += 1 if event == "start" else -1
            if event == "end" and depth == 1 and element.tag == "record":
                records.append(element)
    except ET.ParseError:  # the fault, queued behind the events before it
        cut = True
    return records, cut


def _finding(record: ET.Element, tool: str) -> Finding:
    """A record as a Finding: a race (two accesses, no thread) or a single access (memcheck,
    initcheck, and by the same shape whatever else a tool reports with who/what/where)."""
    what = record.find("what")
    if what is not None and what.find("source") is not None:
        return _race(record, what, tool)
    where = _location(record.find("where"))
    return Finding(tool=tool, kind=_access_kind(what), kernel=where.kernel, file=where.file,
                   line=where.line, thread=_dim3(record.find("who/threadIdx")),
                   block=_dim3(record.find("who/blockIdx")), message=_text(what, "text"),
                   pc=where.pc, details=_leaves(what))


def _race(record: ET.Element, what: ET.Element, tool: str) -> Finding:
    """A racecheck hazard: located at its first access, the second kept beside it."""
    first, second = (_access(what.find(side)) for side in ("source", "destination"))
    pair = (first.direction, second.direction)
    hazard = _HAZARDS.get(pair, "/".join(pair))
    count = _int(_text(what, "destination/count")) or 1
    details = tuple((name, value) for name, value in
                    (("hazard", hazard), ("level", _text(record, "level"))) if value)
    return Finding(tool=tool, kind=f"shared-memory race ({hazard})", kernel=first.kernel,
                   file=first.file, line=first.line, count=count, message=_text(what, "text"),
                   pc=first.pc, details=details, accesses=(first, second))


def _access(side: ET.Element | None) -> Access:
    where = _location(None if side is None else side.find("where"))
    return replace(where, direction=_text(side, "direction").lower())


def _location(where: ET.Element | None) -> Access:
    """Kernel, file, line and pc of a <where> (an Access without a direction)."""
    return Access(direction="", kernel=_text(where, "func") or None,
                  file=_text(where, "path") or None, line=_int(_text(where, "line")),
                  pc=_text(where, "pc") or None)


def _access_kind(what: ET.Element | None) -> str:
    """'out-of-bounds global write' from memcheck's error/space/direction fields; else from
    the text ('Uninitialized __global__ memory read of size 4 bytes' -> 'uninitialized
    global read'); else the text up to its particulars."""
    error, direction = _text(what, "error"), _text(what, "direction")
    space = _text(what, "space").strip("_")
    if error and direction:
        return " ".join(part for part in (error.replace(" ", "-"), space, direction) if part)
    message = _text(what, "text")
    match = _ACCESS_TEXT.match(message)
    if match:
        return f"{match['what']} {match['space']} {match['access']}".lower()
    head = _PARTICULARS.split(message, maxsplit=1)[0].strip()
    return (head[:1].lower() + head[1:]) or "unknown problem"


def _leaves(what: ET.Element | None) -> tuple[tuple[str, str], ...]:
    """The record's particulars: <what>'s childless children but its text, in order."""
    if what is None:
        return ()
    return tuple((child.tag, (child.text or "").strip()) for child in what
                 if child.tag not in _NOT_DETAILS and len(child) == 0)


def _dim3(element: ET.Element | None) -> Dim3 | None:
    if element is None:
        return None
    values = [_int(_text(element, axis)) for axis in "xyz"]
    return None if None in values else tuple(values)  # type: ignore[return-value]


def _text(element: ET.Element | None, path: str) -> str:
    """The stripped text at `path` under `element`; '' where there is none."""
    found = None if element is None else element.find(path)
    return "" if found is None or found.text is None else found.text.strip()


def _int(text: str) -> int | None:
    try:
        return int(text.replace(",", ""))  # the console writes '262,144'
    except ValueError:
        return None


# ---------------------------------------------------------------- folding and totals


def summarize(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (tool, kind, kernel, file, line), counts summed, the first record's
    thread, block and particulars kept as the sample; most frequent first, then by place.
    initcheck writes one record per thread: 100 records of one bad read become one row."""
    folded: dict[tuple, Finding] = {}
    for finding in findings:
        key = (finding.tool, finding.kind, finding.kernel, finding.file, finding.line)
        first = folded.get(key)
        folded[key] = finding if first is None else replace(first,
                                                            count=first.count + finding.count)
    return sorted(folded.values(), key=_order)


def _order(finding: Finding) -> tuple:
    return (-finding.count, finding.file or "", finding.line or 0, finding.kernel or "",
            finding.tool, finding.kind)


def error_summary(text: str) -> int | None:
    """The tool's own total from its console text: 'ERROR SUMMARY: N errors' (memcheck,
    initcheck, synccheck) or, for racecheck, the hazards displayed (errors and warnings).
    Summed over the sanitized processes; None when absent: the tool died before its end."""
    counts = [int(n) for n in _ERROR_SUMMARY.findall(text)]
    counts += [int(n) for n in _RACECHECK_SUMMARY.findall(text)]
    return sum(counts) if counts else None


# ---------------------------------------------------------------- source lines


def source_line(file: str | None, line: int | None,
                sources: Mapping[str, str]) -> tuple[str, int, str] | None:
    """(name, line, the line's text stripped) of a finding's file:line in the user's sources.

    gpubench's builds start every source with `#line 1 "<name>"` (build/compile.py): a file's
    path, or a label such as 'spec.py: cuda_sources[0]' for a source given as text, so the
    sanitizer names that, where a plain load_inline build is named by its build folder's
    cuda.cu. `sources` maps such names to texts: a name matches the file itself, or its end
    after a '/' (the compiler may join a relative name to its working folder); the longest
    wins. None when no name matches or the line is past the text's end (it changed since)."""
    if file is None or line is None or line < 1:
        return None
    name = _source_name(file, sources)
    if name is None:
        return None
    lines = sources[name].splitlines()
    if line > len(lines):
        return None
    return name, line, lines[line - 1].strip()


def _source_name(file: str, sources: Mapping[str, str]) -> str | None:
    if file in sources:
        return file
    tails = [name for name in sources if file.endswith("/" + name.lstrip("/"))]
    return max(tails, key=len, default=None)


def short_file(file: str | None) -> str:
    """The file as the console output names it: its last part ('cuda.cu')."""
    return PurePosixPath(file).name if file else "?"

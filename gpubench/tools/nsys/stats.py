"""Reading what `nsys stats -f csv -o -` prints: one CSV table per report, with chatter. Pure.

nsys writes progress lines ("Generating SQLite file ...", "Processing [x.sqlite] with
[.../cuda_gpu_kern_sum.py]...") before each report's CSV header, "SKIPPED: ..." for a
report with no data, and several reports one after the other. Older versions (and the
table format) mark a report with a "** Title (name):" banner instead. So: a report's name
comes from the last such line (or, failing that, from its columns), its table is the
quoted header after it and the rows after that, and every value is looked up by column
name. Numbers may carry thousands separators ("5,850,000") and become floats.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from gpubench.codec import Record
from gpubench.tools.nsys.command import KERNEL_REPORT, NVTX_REPORT, OLD_REPORT_NAMES

# Columns that hold text even when a value looks like a number (a kernel called "1").
TEXT_COLUMNS = frozenset({"Name", "Range", "Style", "Operation", "Domain", "Category"})
# Lines nsys prints around the tables that are never part of one.
MESSAGE_PREFIXES = ("Generating", "Exporting", "Processing", "SKIPPED", "ERROR", "WARNING",
                    "NOTICE", "**")
_PROCESSING = re.compile(r"^Processing \[.*?\] with \[(?P<script>[^\]]+)\]")
_BANNER = re.compile(r"^\*\*.*\((?P<name>[\w:]+)\)")
_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d*)(\.\d+)?([eE][+-]?\d+)?$")
_NEW_NAMES = {old: new for new, old in OLD_REPORT_NAMES.items()}
_NS_PER = {"ns": 1.0, "us": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}

Table = list[dict]


@dataclass(frozen=True)
class TimingRow(Record):
    """One row of a timing summary (kernels or NVTX ranges), times in nanoseconds."""

    name: str
    instances: int
    total_ns: float | None
    avg_ns: float | None
    med_ns: float | None
    min_ns: float | None
    max_ns: float | None
    stddev_ns: float | None
    time_pct: float | None
    style: str | None = None  # NVTX only: PushPop or StartEnd


def parse_stats(text: str) -> dict[str, Table]:
    """Every report in `text` -> its rows as dicts (header -> value), in the order printed.

    A report that nsys processed but SKIPPED (no data of its kind) maps to an empty list;
    old report names are given under the current ones (gpukernsum -> cuda_gpu_kern_sum).
    """
    tables: dict[str, Table] = {}
    named: str | None = None  # the report the last Processing/banner line announced
    header: list[str] | None = None
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        announced = report_announced(stripped)
        if announced:
            named, header = announced, None
            tables.setdefault(announced, [])
        elif not stripped:
            header = None  # a blank line ends a table
        elif stripped.startswith(MESSAGE_PREFIXES):
            continue
        elif header is None:
            fields = _split(stripped)
            if _is_header(stripped, fields):
                header, current, named = fields, named or _infer_name(fields, tables), None
                tables.setdefault(current, [])
        else:
            fields = _split(stripped)
            if len(fields) == len(header):
                tables[current].append(_typed(header, fields))
    return tables


def report_announced(line: str) -> str | None:
    """The report a 'Processing [...] with [.../NAME.py]' or '** Title (NAME):' line names."""
    match = _PROCESSING.match(line)
    if match:
        script = re.split(r"[\\/]", match["script"])[-1]
        return canonical_name(script.removesuffix(".py"))
    match = _BANNER.match(line)
    return canonical_name(match["name"]) if match else None


def canonical_name(name: str) -> str:
    """'gpukernsum' -> 'cuda_gpu_kern_sum'; 'nvtx_sum:base' -> 'nvtx_sum'."""
    base = name.split(":", 1)[0]
    return _NEW_NAMES.get(base, base)


def kernel_rows(tables: dict[str, Table]) -> list[TimingRow]:
    """cuda_gpu_kern_sum as typed rows, longest total time first."""
    return _timing_rows(tables.get(KERNEL_REPORT, []), "Name")


def range_rows(tables: dict[str, Table]) -> list[TimingRow]:
    """nvtx_sum as typed rows (name = the range, often 'domain:range'), longest first."""
    return _timing_rows(tables.get(NVTX_REPORT, []), "Range")


def to_number(text: str) -> float | None:
    """'5,850,000' -> 5850000.0, '12.5' -> 12.5; None for anything else."""
    text = text.strip()
    if not text or not _NUMBER.match(text) or not any(c.isdigit() for c in text):
        return None
    return float(text.replace(",", ""))


# ---------------------------------------------------------------- helpers


def _split(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def _is_header(line: str, fields: list[str]) -> bool:
    """nsys quotes its CSV headers; a header has no numbers in it (a stray message might)."""
    quoted = line.startswith('"') or "(%)" in line
    return quoted and len(fields) >= 2 and all(f and to_number(f) is None for f in fields)


def _infer_name(header: list[str], tables: dict[str, Table]) -> str:
    """A table with no Processing line before it: named by its columns."""
    if "Range" in header and "Style" in header:
        return NVTX_REPORT
    if "Name" in header and "Instances" in header:
        return KERNEL_REPORT
    return f"report{len(tables) + 1}"


def _typed(header: list[str], fields: list[str]) -> dict:
    row = {}
    for key, value in zip(header, fields, strict=True):
        number = None if key in TEXT_COLUMNS else to_number(value)
        row[key] = number if number is not None else value
    return row


def _timing_rows(rows: Table, name_column: str) -> list[TimingRow]:
    typed = [_timing_row(row, name_column) for row in rows]
    return sorted(typed, key=lambda r: r.total_ns or 0.0, reverse=True)


def _timing_row(row: dict, name_column: str) -> TimingRow:
    """Columns found by name, old spellings too: 'Avg (ns)' or 'Average', 'Time(%)'."""
    instances = _value(row, "Instances", "Count")
    style = row.get("Style")
    return TimingRow(
        name=str(row.get(name_column, "")),
        instances=int(instances) if instances is not None else 0,
        total_ns=_nanoseconds(row, "Total Time", "Total"),
        avg_ns=_nanoseconds(row, "Avg", "Average"),
        med_ns=_nanoseconds(row, "Med", "Median"),
        min_ns=_nanoseconds(row, "Min", "Minimum"),
        max_ns=_nanoseconds(row, "Max", "Maximum"),
        stddev_ns=_nanoseconds(row, "StdDev"),
        time_pct=_value(row, "Time (%)", "Time(%)"),
        style=str(style) if style is not None else None,
    )


def _nanoseconds(row: dict, *stems: str) -> float | None:
    """The column 'STEM (unit)' or plain 'STEM' (nanoseconds), scaled to nanoseconds."""
    for key, value in row.items():
        stem, _, unit = key.partition(" (")
        unit = unit.rstrip(")") or "ns"
        if stem in stems and unit in _NS_PER and isinstance(value, float):
            return value * _NS_PER[unit]
    return None


def _value(row: dict, *keys: str) -> float | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, float):
            return value
    return None

"""compute-sanitizer findings for people and files: rich renderables and JSON. Pure: no printing.

Per variant, one table of what the tools found, folded (profilers/sanitizer.summarize: one
row per problem and place, with its count and a sample thread), each row pointing at the
user's own source line; then what the table cannot say: which tools found nothing, whose
output was cut short, and the failed CUDA calls a fault leaves behind. A variant where no
tool found anything is one line. The tables are report/table.FittedTable: they fit the
terminal, columns dropped by priority and long cells wrapped at spaces.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from gpubench.report.table import FittedTable
from gpubench.tools.sanitizer.log import (
    Access,
    Finding,
    SanitizerLog,
    VariantReport,
    short_file,
    source_line,
    summarize,
)

SCHEMA_VERSION = 1

HEADERS = ["tool", "kind", "kernel", "where", "code", "count", "sample"]
JUSTIFY = {"count": "right"}
# A narrow terminal loses the tool first (the kind names it: a race is racecheck's), then the
# sample thread (--json has it), then the kernel (the code line shows where). Kind, place,
# code and count always stay.
DROP_ORDER = ("tool", "sample", "kernel")
# Wrapping columns and their narrowest widths: 13 holds 'out-of-bounds' and 'shared-memory'
# whole and 'thread 0,0,0' / 'block 256,0,0' a line each; a line of code reads at 20.
WRAP = {"kind": 13, "kernel": 12, "where": 12, "code": 20, "sample": 13}
CAPTION = ("count: occurrences folded into the row (racecheck: the hazards it counted); "
           "sample: the first one's thread and block.")
NO_LINEINFO_CAPTION = (" A row without file:line comes from a kernel built without -lineinfo; "
                       "where gives its offset in the kernel (pc).")


def sanitize_view(reports: Sequence[VariantReport]) -> Group:
    """Every variant's findings table and notes, in the order given."""
    return Group(*(part for report in reports for part in variant_view(report)))


def variant_view(report: VariantReport) -> list:
    """The variant's table (when anything was found), then its notes."""
    findings = summarize(f for log in report.logs for f in log.findings)
    table = [findings_table(report.variant, findings, report)] if findings else []
    return table + [Text(note, style=style) for note, style in notes(report)]


def findings_table(title: str, findings: Sequence[Finding], report: VariantReport) -> FittedTable:
    """One row per folded finding, fitted to the console it is printed on."""
    rows = [_row(finding, report) for finding in findings]
    caption = CAPTION + (NO_LINEINFO_CAPTION if any(f.line is None for f in findings) else "")
    return FittedTable(f"{title}: compute-sanitizer findings", HEADERS, rows, JUSTIFY,
                       DROP_ORDER, WRAP, caption=caption, elsewhere="--json")


def notes(report: VariantReport) -> list[tuple[str, str]]:
    """(line, style): the tools that found nothing, cut logs, failed CUDA calls."""
    clean = [log.tool for log in report.logs if _clean(log)]
    lines = []
    if clean:
        lines.append((f"{report.variant}  clean: {', '.join(clean)} found nothing", "green"))
    for log in report.logs:
        if log.cut:
            lines.append((f"{report.variant}: {log.tool}'s output was cut short (the tool "
                          "stopped before it finished): only its complete records are shown",
                          "yellow"))
        if log.api_errors:
            lines.append((f"{report.variant}: {log.tool} also saw {_calls(len(log.api_errors))}, "
                          f"first: {log.api_errors[0]}", "dim"))
    return lines


def _clean(log: SanitizerLog) -> bool:
    return not (log.findings or log.api_errors or log.cut)


def _calls(n: int) -> str:
    return f"{n} failed CUDA call" + ("s" if n != 1 else "")


def _row(finding: Finding, report: VariantReport) -> dict:
    where, code = _where_and_code(finding, report)
    return {"tool": finding.tool, "kind": finding.kind, "kernel": finding.kernel or "-",
            "where": where, "code": code, "count": str(finding.count),
            "sample": _sample(finding)}


def _where_and_code(finding: Finding, report: VariantReport) -> tuple[str, str]:
    """'cuda.cu:14' and its line of code; a race's two sides as 'cuda.cu:18, 19' and one
    line of code each, named by what they did ('write: ...')."""
    sides = finding.accesses or (Access("", finding.kernel, finding.file, finding.line,
                                        finding.pc),)
    places, codes, previous = [], [], None
    for side in sides:
        name, code = _place(side, report)
        if name is None:
            places.append(f"pc {side.pc or '?'}")
        else:  # the file named once for both sides of a race within it
            places.append(f"{side.line}" if name == previous else f"{name}:{side.line}")
        previous = name
        codes.append((f"{side.direction}: " if side.direction else "") + (code or "-"))
    return ", ".join(places), "\n".join(codes)


def _place(side: Access, report: VariantReport) -> tuple[str | None, str | None]:
    """(the file's name as shown, the line's code) of one access: the user's name and code
    where the sources have it, else the tool's file name and no code; (None, None) without
    a line (no -lineinfo)."""
    if side.line is None:
        return None, None
    found = source_line(side.file, side.line, report.sources)
    if found is None:
        return short_file(side.file), None
    name, _, code = found
    return short_file(name), code  # 'buggy.cu', not the path the build named it by


def _sample(finding: Finding) -> str:
    """'thread 0,0,0 block 256,0,0' (wraps between the two), '-' when the tool gives none."""
    parts = [f"{label} {','.join(map(str, dims))}"
             for label, dims in (("thread", finding.thread), ("block", finding.block)) if dims]
    return " ".join(parts) or "-"


# --- files -----------------------------------------------------------------------------------


def findings_to_json(reports: Sequence[VariantReport]) -> dict:
    """Everything, nested: per variant and tool its folded findings with their source lines,
    whether the log was cut, and the failed CUDA calls."""
    return {
        "schema": SCHEMA_VERSION,
        "variants": [{"variant": report.variant,
                      "clean": all(_clean(log) for log in report.logs),
                      "tools": [_log_to_dict(log, report) for log in report.logs]}
                     for report in reports],
    }


def _log_to_dict(log: SanitizerLog, report: VariantReport) -> dict:
    return {"tool": log.tool, "cut": log.cut, "records": len(log.findings),
            "api_errors": list(log.api_errors),
            "findings": [finding_to_dict(f, report) for f in summarize(log.findings)]}


def finding_to_dict(finding: Finding, report: VariantReport) -> dict:
    return {
        "tool": finding.tool, "kind": finding.kind, "kernel": finding.kernel,
        "file": finding.file, "line": finding.line, "pc": finding.pc, "count": finding.count,
        "thread": list(finding.thread) if finding.thread else None,
        "block": list(finding.block) if finding.block else None,
        "message": finding.message, "details": dict(finding.details),
        "source": _source_dict(finding.file, finding.line, report),
        "accesses": [{"direction": a.direction, "kernel": a.kernel, "file": a.file,
                      "line": a.line, "pc": a.pc, "source": _source_dict(a.file, a.line, report)}
                     for a in finding.accesses],
    }


def _source_dict(file: str | None, line: int | None, report: VariantReport) -> dict | None:
    found = source_line(file, line, report.sources)
    return None if found is None else dict(zip(("file", "line", "text"), found, strict=True))

"""How `run --watch` says an iteration: one line per point, against the last iteration in
which the point passed and against the first, in `gpubench compare`'s words:

    block_reduce  17.0 us -> 16.2 us  FASTER -4.7% [-5.1%..-4.3%]  (vs first #1: 18.1 us
        FASTER -10.5% [-11.0%..-10.1%])      (one line on the terminal)

The verdict, change and CI are compare_view's cells of the same comparison; UNSURE says
why, as compare's table does. A failed or SUSPECT point says its status and its error
(the file:line and source line the worker recorded), made safe for the terminal; later
lines of a long error are indented under it. Pure: builds text, never prints.
"""

from __future__ import annotations

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.analysis.watch_history import Earlier, PointReport
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.report.compare_view import change_text, ci_text
from gpubench.report.table import STATUS_STYLE

INDENT = "    "


def point_names(keys: list[PointKey]) -> dict[str, str]:
    """{key text: the shortest name that tells the keys apart}: the variant, with the
    family, dtype, shape and mode only where the keys differ in them."""
    parts = ("family", "variant", "dtype", "shape", "mode")
    varied = [p for p in parts if p == "variant" or len({str(getattr(k, p)) for k in keys}) > 1]

    def name(key: PointKey) -> str:
        shown = [key.shape.label() if p == "shape" else str(getattr(key, p)) for p in varied]
        return safe_text.one_line(" ".join(shown))

    return {key.text(): name(key) for key in keys}


def iteration_lines(reports: list[PointReport], where: str = "") -> list[str]:
    """One line per point of an iteration (a failure's error may add indented lines),
    names aligned; `where`: the results.json that holds a cut error's full text."""
    names = point_names([r.result.key for r in reports])
    width = max((len(n) for n in names.values()), default=0)
    return [point_line(report, names[report.result.key.text()].ljust(width), where)
            for report in reports]


def point_line(report: PointReport, name: str, where: str = "") -> str:
    result = report.result
    if not result.passed:
        return _status_line(report, name, where)
    now = fmt.duration(result.median_s)
    if report.previous is None:
        return f"{name}  {now}  (first passing time)"
    line = f"{name}  {_against(report.previous, now)}"
    if report.first is not None:
        line += f"  (vs first #{report.first.iteration}: {_against(report.first, '')})"
    return line


def _against(earlier: Earlier, now: str) -> str:
    """'17.0 us -> 16.2 us  FASTER -4.7% [-5.1%..-4.3%]' (`now` empty: '17.0 us FASTER
    ...'); the reason after the verdict; the note when the point was not compared."""
    point = earlier.point
    comparison = point.comparison
    if comparison is None:
        return safe_text.one_line(f"#{earlier.iteration}: {point.note or point.verdict}")
    then = fmt.duration(comparison.base_median_s)
    times = f"{then} -> {now}  " if now else f"{then} "
    mark = "*" if comparison.marked else ""
    said = (f"{times}{comparison.verdict}{mark} {change_text(comparison)} "
            f"[{ci_text(comparison)}]")
    if comparison.reason:  # why UNSURE; or another config ran (analysis/config_change.py)
        said += f" ({comparison.reason})"
    return safe_text.one_line(said)


def _status_line(report: PointReport, name: str, where: str) -> str:
    """'naive  BUILD ERROR (last passed #2: 16.2 us): kernel.cu:12: error: ...'."""
    result = report.result
    status = STATUS_STYLE.get(result.status, (result.status.upper(), ""))[0]
    was = f" (last passed: #{report.previous.iteration})" if report.previous else ""
    error = safe_text.terminal(result.error or "no reason recorded", where=where).strip()
    head, *rest = error.splitlines() or [""]
    text = f"{name}  {status}{was}: {head}"
    if result.status in (R.SKIPPED, R.NOT_RUN):
        return text
    return "\n".join([text, *(INDENT + line for line in rest)])


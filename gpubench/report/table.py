"""The results table of one (family, dtype, size) group, as a rich Table. Pure: no printing."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from gpubench import results as R
from gpubench.parsing import format_size
from gpubench.report import format as fmt

STATUS_STYLE = {
    R.OK: ("PASS", "green"),
    R.FAIL: ("FAIL", "bold red"),
    R.ERROR: ("ERROR", "bold red"),
    R.CRASHED: ("CRASHED", "bold red"),
    R.TIMEOUT: ("TIMEOUT", "bold red"),
    R.COMPILE_ERROR: ("BUILD ERROR", "bold red"),
    R.SKIPPED: ("skipped", "dim"),
    R.NOT_RUN: ("not run", "dim"),
}


def group_title(group: list[R.Result], size_name: str = "n", device: str = "") -> str:
    first = group[0]
    where = f" on {device}" if device else ""
    return f"{first.family}  {size_name}={format_size(first.size)}  {first.dtype}{where}"


def group_table(group: list[R.Result], size_name: str = "n", device: str = "") -> Table:
    """One row per variant: check, median, spread, samples, rates, speedup, build, note."""
    table = Table(title=group_title(group, size_name, device), title_justify="left",
                  caption=_caption(group), caption_justify="left")
    for header, justify in (("variant", "left"), ("kind", "left"), ("check", "left"),
                            ("median", "right"), ("IQR", "right"), ("n", "right"),
                            ("TFLOP/s", "right"), ("GB/s", "right"), ("vs base", "right"),
                            ("build", "right")):
        table.add_column(header, justify=justify, no_wrap=True)
    for result in group:
        table.add_row(*_row(result))
    return table


def _row(result: R.Result) -> list:
    label, style = STATUS_STYLE.get(result.status, (result.status, ""))
    # Numbers only for rows that passed: a wrong answer's speed is not worth reading.
    summary = result.summary if result.passed else None
    name = result.variant + (" (base)" if result.baseline else "")
    return [
        name,
        result.kind,
        Text(label, style=style),
        fmt.duration(summary.median if summary else None),
        fmt.percent(summary.rel_iqr) if summary else "-",
        str(summary.n) if summary else "-",
        fmt.rate(result.tflops if summary else None),
        fmt.rate(result.gbps if summary else None),
        fmt.ratio(result.speedup),
        _build_cell(result),
    ]


def group_notes(group: list[R.Result]) -> list[str]:
    """What the table has no room for: why a row failed or was skipped, in full."""
    return [f"{r.variant}: {_note(r)}" for r in group if r.status != R.OK and _note(r)]


def _build_cell(result: R.Result) -> str:
    """Build (or Triton JIT) time; 'cached' when an earlier build was reused."""
    if result.compile_s is None or result.kind == "torch":
        return "-"
    if result.compile_cached:
        if result.compile_s < 1e-3:  # reused within the same worker process
            return "cached"
        return f"cached {fmt.duration(result.compile_s, 2)}"
    return fmt.duration(result.compile_s, 2)


def _note(result: R.Result) -> str:
    if result.status == R.FAIL:
        summary = result.recheck if result.recheck and not result.recheck["passed"] \
            else result.check
        return _check_text(summary) if summary else (result.error or "")
    return result.error or ""


def _check_text(check: dict) -> str:
    from gpubench.check import CheckResult

    return CheckResult(**check).summary()


def _caption(group: list[R.Result]) -> str:
    methods = sorted({r.method for r in group if r.method})
    timing = "; ".join(methods) if methods else "nothing was timed"
    return (f"time: median of n samples, {timing}. IQR as % of median. "
            "TFLOP/s and GB/s from the family's napkin-math FLOPs and bytes. "
            "vs base = baseline median / variant median (PASS rows only).")

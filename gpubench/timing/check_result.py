"""What a comparison of an output with its reference found: a CheckResult.

A record of its own, below the measurement and the result that carry it (the first
call's check on a Result, the timed calls' re-check on a Measurement), so that both hold
it as a type and nothing reads it back by key. families/check.py makes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.codec import Record


@dataclass(frozen=True)
class CheckResult(Record):
    passed: bool
    # What the comparison measured; a file holding fewer keys (an older gpubench's, a
    # worker's bare verdict) reads them as unknown: None, or 0 elements.
    max_abs_err: float | None = None  # inf when an element is NaN, inf or unwritten
    worst_ratio: float | None = None  # max |out - ref| / (atol + rtol |ref|); <= 1 passes
    mismatches: int = 0  # elements beyond tolerance, non-finite ones included
    nonfinite: int = 0  # NaN/inf where the reference is finite (unwritten elements land here)
    total: int = 0
    atol: float | None = None
    rtol: float | None = None
    note: str = ""

    def summary(self) -> str:
        """'max err 3.1e-02 (2.1x tol), 17 of 1048576 elements off, 5 NaN/unwritten'."""
        if self.note:
            return self.note
        text = "max err " + ("unknown" if self.max_abs_err is None
                             else f"{self.max_abs_err:.2g}")
        if self.passed:
            return text
        if self.worst_ratio is not None and self.worst_ratio != float("inf"):
            text += f" ({self.worst_ratio:.3g}x tol)"
        text += f", {self.mismatches} of {self.total} elements off"
        if self.nonfinite:
            text += f", {self.nonfinite} NaN/inf/unwritten"
        return text


def check_result_of(data) -> CheckResult | None:
    """A check as another process wrote it (a worker's result file), or None without one."""
    return CheckResult.from_dict(data) if isinstance(data, dict) and data else None

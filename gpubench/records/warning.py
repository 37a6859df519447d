"""A warning about a row, as data: what is wrong, and what to do about it. Every verdict
(gpubench/verdicts/) speaks in it; tables, JSON and notebooks show the same advice."""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.codec import Record


@dataclass(frozen=True)
class TimingWarning(Record):
    code: str
    message: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.message} — {self.remedy}"

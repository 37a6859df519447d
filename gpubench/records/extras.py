"""Extras: what a feature adds to a Result, with the columns it owns.

A Result's core fields are what every run observes (status, measurement, check,
build) and what its group implies (speedup, roofline, warnings). Everything a flag
adds (`--ncu`, `--ncu-check`, `--sanitize`, ...) is an Extra in `Result.extras`:
its value and its spec. The spec says where the value goes: its results.json key,
its results.csv columns, and, if any, its table column or its mark on the check
cell. `to_record`, `to_dict`, `from_dict` and the table read specs, never a
feature's name, so a new feature is its own module plus one line in
records/features/__init__.py (the registry, in the order of the columns).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Column:
    """A results.csv (and to_record, and results.json top-level) column: `read(result)`."""

    name: str
    read: Callable[[Any], object]


@dataclass(frozen=True)
class TableColumn:
    """A column of the live table, shown when any row of the group has the extra.
    `after`: the column it follows; `drop_after`: the column dropped just before it
    when the terminal is narrow; `caption`: what it means, appended to the caption."""

    header: str
    cell: Callable[[Any], str]  # the extra's value -> the cell
    after: str
    drop_after: str
    caption: str = ""


@dataclass(frozen=True)
class ExtraSpec:
    """How one feature's value is saved and shown. `saved`: written to results.json
    under `name` (always, null when a result has none, so the keys never vary) and read
    back from it; `marks_check(value)`: the check cell gets a '*' (with `mark_caption`)."""

    name: str
    columns: tuple[Column, ...] = ()
    saved: bool = True
    table: TableColumn | None = None
    marks_check: Callable[[Any], bool] | None = None
    mark_caption: str = ""


@dataclass(frozen=True)
class Extra:
    """A feature's value on one Result, with the spec that says where it goes."""

    spec: ExtraSpec
    value: Any


def value_of(result, name: str, key: str):
    """`result.extras[name].value[key]`, None where the result has no such extra."""
    extra = result.extras.get(name)
    return (extra.value or {}).get(key) if extra is not None else None

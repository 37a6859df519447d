"""The one codec (gpubench/codec.py): a record written and read back whole, by its types."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pytest

from gpubench.codec import Record
from gpubench.records.shape import Shape


@dataclass(frozen=True)
class Inner(Record):
    name: str
    value: float = 0.0


@dataclass(frozen=True)
class Outer(Record):
    DERIVED = ("total",)
    UNKNOWN = "refuse"

    inners: tuple[Inner, ...]
    best: Inner | None = None
    by_name: dict[str, Inner] = field(default_factory=dict)
    shape: Shape = field(default_factory=lambda: Shape({"n": 4}))
    ratio: float = math.nan

    @property
    def total(self) -> float:
        return sum(i.value for i in self.inners)


def roundtrip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


def test_a_record_comes_back_whole_with_its_nested_types():
    record = Outer((Inner("a", 1.5), Inner("b", 2)), Inner("c"), {"d": Inner("d", 4.0)},
                   Shape({"M": 2, "N": 3}), 1.25)
    data = record.to_dict()
    assert data["total"] == 3.5 and data["inners"][0] == {"name": "a", "value": 1.5}
    again = roundtrip(record)
    assert again == record and isinstance(again.inners, tuple)
    assert isinstance(again.shape, Shape) and isinstance(again.by_name["d"], Inner)


def test_a_missing_field_takes_its_default_and_a_null_float_is_nan():
    again = Outer.from_dict({"inners": [], "ratio": None})
    assert again.best is None and math.isnan(again.ratio) and again.shape == Shape({"n": 4})


def test_unknown_keys_are_refused_or_ignored_as_the_record_says():
    with pytest.raises(ValueError, match="unknown key"):
        Outer.from_dict({"inners": [], "surprise": 1})
    assert Inner.from_dict({"name": "x", "from_a_later_version": 1}) == Inner("x")
    assert Outer.from_dict({"inners": [], "total": 7}).total == 0  # derived: not read


def test_no_record_is_read_from_what_is_not_one():
    with pytest.raises(ValueError, match="lacks name"):
        Inner.from_dict({"value": 1.0})
    with pytest.raises(ValueError, match="must be a dict"):
        Inner.from_dict(["name"])

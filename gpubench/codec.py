"""One codec for gpubench's records: a dataclass to a JSON-ready dict and back, by its fields'
declared types, so that no record writes its own `to_dict`/`from_dict` field by field.

A record inherits `Record` and declares, where it needs to:
- DERIVED: properties (or methods) written beside the fields for whoever reads the file (an
  IQR next to the quartiles), never read back: they follow from the fields;
- UNKNOWN: what a key that is no field means on reading: "ignore" (a file of another
  version: a key it has that this one dropped) or "refuse" (a message from gpubench's own
  code, where an unknown key is a version mismatch or a bug).

Writing: a dataclass field by field (then DERIVED), tuples as lists, mappings key by key,
anything with its own `to_dict` through it. Reading: each field converted to its declared
type (a nested record, a tuple of them, `X | None`, a mapping of them); a field a file
lacks takes its default (an older file still loads); a float field that a file holds as
null is NaN (JSON has no NaN). Pure: no I/O.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, ClassVar


class Record:
    """A dataclass that the codec writes and reads (see the module docstring)."""

    DERIVED: ClassVar[tuple[str, ...]] = ()
    UNKNOWN: ClassVar[str] = "ignore"

    def to_dict(self) -> dict:
        return _fields_of(self)

    @classmethod
    def from_dict(cls, data: Mapping):
        return decode(cls, data)


def encode(value: Any) -> Any:
    """`value` as JSON-ready data (see the module docstring): a record (or anything) with a
    `to_dict` through it, a plain dataclass field by field."""
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return _fields_of(value)
    if isinstance(value, Mapping):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    return value


def _fields_of(record: Any) -> dict:
    """A dataclass's fields, then its DERIVED values (a property, or a method's result)."""
    data = {f.name: encode(getattr(record, f.name)) for f in fields(record)}
    for name in getattr(record, "DERIVED", ()):
        derived = getattr(record, name)
        data[name] = encode(derived() if callable(derived) else derived)
    return data


def decode(cls: type, data: Mapping):
    """An instance of the dataclass `cls` from what `encode` wrote (ValueError, naming the
    problem, for data that is no such record)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a {cls.__name__} must be a dict, not {type(data).__name__}")
    declared = {f.name: f for f in fields(cls) if f.init}
    unknown = sorted(set(data) - set(declared) - set(getattr(cls, "DERIVED", ())))
    if unknown and getattr(cls, "UNKNOWN", "ignore") == "refuse":
        raise ValueError(f"a {cls.__name__} has unknown key(s) {', '.join(unknown)}")
    hints = _hints(cls)
    missing = [name for name, f in declared.items() if name not in data
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise ValueError(f"a {cls.__name__} lacks {', '.join(missing)}")
    return cls(**{name: convert(hints.get(name), data[name]) for name in declared
                  if name in data})


def convert(kind: Any, value: Any) -> Any:
    """`value` (JSON data) as the declared type `kind` (None: as it is)."""
    if kind is None or kind is Any:
        return value
    if value is None:
        return math.nan if kind is float else None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return convert(options[0], value) if len(options) == 1 else value
    if isinstance(kind, type) and hasattr(kind, "from_dict") and isinstance(value, Mapping):
        return kind.from_dict(value)
    if isinstance(kind, type) and issubclass(kind, Mapping) and kind not in (dict, Mapping) \
            and isinstance(value, Mapping):
        return kind(value)  # a mapping type of gpubench's own (Shape)
    if origin is tuple:
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else None
        return tuple(convert(item, v) for v in value) if item is not None else tuple(value)
    if origin is list:
        return [convert(args[0] if args else None, v) for v in value]
    if origin in (dict, Mapping, typing.Mapping) or kind in (dict, Mapping):
        item = args[1] if len(args) == 2 else None
        return {key: convert(item, v) for key, v in value.items()}
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _hints(cls: type) -> dict:
    """The fields' declared types, resolved (string annotations under `from __future__
    import annotations`); a name the class's module cannot resolve is read as it is."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}

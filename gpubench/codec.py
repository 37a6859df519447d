"""One codec for gpubench's records: a dataclass to a JSON-ready dict and back, by its fields'
declared types, so that no record writes its own `to_dict`/`from_dict` field by field.

A record inherits `Record` and declares, where it needs to:
- DERIVED: properties (or methods) written beside the fields for whoever reads the file (an
  IQR next to the quartiles), never read back: they follow from the fields;
- UNKNOWN: what a key that is no field means on reading: "ignore" (a file of another
  version: a key it has that this one dropped) or "refuse" (a message from gpubench's own
  code, where an unknown key is a version mismatch or a bug);
- upgrade(data): a classmethod the codec calls on the raw mapping before decoding it, so
  that files written by older versions still load (a key that moved or was renamed is put
  where the fields have it) and a message is checked beyond its types (a status no
  worker sends); its ValueError is the reader's;
- ERROR: the ValueError (sub)class raised for data that is no such record, a nested part's
  failure included (a worker's MalformedWorkerResult);
- WRITTEN: the keys in the order a file has them, where that is not the fields' order
  (results.json's rows, older than their record): each a field, a DERIVED value or a
  method, written under its name; one marked "*" is a mapping spread into the record
  (a key written before it keeps its place and takes the new value: dict.update);
- a field's `saved_as(name, write=...)` metadata: the key the file holds it under, both
  ways, and a function that writes its (non-None) value where the type is no record (a
  point key as its text, a path as a string).

Writing: a dataclass field by field (then DERIVED; or WRITTEN), tuples as lists, mappings
key by key, anything with its own `to_dict` through it. Reading: each field converted to
its declared type (a nested record or plain dataclass, a tuple of them, `X | None`, a
mapping of them); a field a file lacks takes its default (an older file still loads); a
float field that a file holds as null is NaN (JSON has no NaN). Pure: no I/O.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, ClassVar

# A field's metadata keys (saved_as): the key a file holds it under, and its writer.
_NAME, _WRITE = "codec_name", "codec_write"


class Record:
    """A dataclass that the codec writes and reads (see the module docstring)."""

    DERIVED: ClassVar[tuple[str, ...]] = ()
    UNKNOWN: ClassVar[str] = "ignore"
    WRITTEN: ClassVar[tuple[str, ...]] = ()
    ERROR: ClassVar[type[ValueError]] = ValueError

    def to_dict(self) -> dict:
        return _fields_of(self)

    @classmethod
    def from_dict(cls, data: Mapping):
        return decode(cls, data)

    @classmethod
    def upgrade(cls, data: Mapping) -> Mapping:
        """The raw mapping as today's fields read it (see the module docstring): as it is."""
        return data


def saved_as(name: str | None = None, write: Callable[[Any], Any] | None = None) -> dict:
    """A field's metadata (dataclasses.field(metadata=...)): the key a file holds it under
    (None: its own name) and how its non-None value is written (None: encode)."""
    return {_NAME: name, _WRITE: write}


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
    """A dataclass's fields, then its DERIVED values (a property, or a method's result);
    or, where it declares WRITTEN, those in that order."""
    declared = {f.name: f for f in fields(record)}
    names = getattr(record, "WRITTEN", ()) or (*declared, *getattr(record, "DERIVED", ()))
    data: dict = {}
    for entry in names:
        name = entry.lstrip("*")
        found = declared.get(name)
        value = getattr(record, name)
        if found is None and callable(value):
            value = value()
        meta = found.metadata if found is not None else {}
        write = meta.get(_WRITE)
        value = write(value) if write is not None and value is not None else encode(value)
        if entry.startswith("*"):
            data.update(value or {})
        else:
            data[meta.get(_NAME) or name] = value
    return data


def decode(cls: type, data: Mapping):
    """An instance of the dataclass `cls` from what `encode` wrote (ValueError, naming the
    problem, for data that is no such record)."""
    error = getattr(cls, "ERROR", ValueError)
    if not isinstance(data, Mapping):
        raise error(f"a {cls.__name__} must be a dict, not {type(data).__name__}")
    upgrade = getattr(cls, "upgrade", None)
    if upgrade is not None:
        data = upgrade(data)
    declared = {f.name: f for f in fields(cls) if f.init}
    renamed = {f.metadata[_NAME]: name for name, f in declared.items() if f.metadata.get(_NAME)}
    data = {renamed.get(key, key): value for key, value in data.items()}
    known = {*declared, *getattr(cls, "DERIVED", ()),
             *(entry.lstrip("*") for entry in getattr(cls, "WRITTEN", ()))}
    unknown = sorted(set(data) - known)
    if unknown and getattr(cls, "UNKNOWN", "ignore") == "refuse":
        raise error(f"a {cls.__name__} has unknown key(s) {', '.join(unknown)}")
    hints = _hints(cls)
    missing = [name for name, f in declared.items() if name not in data
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise error(f"a {cls.__name__} lacks {', '.join(missing)}")
    try:
        return cls(**{name: convert(hints.get(name), data[name]) for name in declared
                      if name in data})
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        if error is ValueError or isinstance(exc, error):
            raise
        raise error(f"a {cls.__name__}'s fields cannot be read: {exc}") from None


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
    if is_dataclass(kind) and isinstance(value, Mapping):
        return decode(kind, value)  # a plain dataclass (a point key) by its fields
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

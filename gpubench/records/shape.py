"""Named axes and shapes: what a point's size is when a kernel has more than one dimension.

A GEMM is M x N x K, attention B x H x S x D, a softmax rows x cols. A family
declares its axes; a Shape is one value per axis, in the family's order,
immutable and hashable so it can key groups, results and files. Pure: parsing
what users type (`M=4096,N=4096,K=128`, `K=64,128,256`) and checking it
against the axes happen here, with one-line errors that name the family and
the axis.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from gpubench.errors import UsageError, did_you_mean
from gpubench.parsing import format_size, parse_size

_AXIS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Axis:
    """One dimension of a family's problem.

    default:      its value when a sweep (`--axis`) leaves it alone, on a GPU
    cpu_default:  the same without a GPU (smaller, so interpreted Triton stays quick);
                  falls back to `default`
    """

    name: str
    description: str = ""
    default: int | None = None
    cpu_default: int | None = None

    def __post_init__(self) -> None:
        if not _AXIS_NAME.match(self.name):
            raise ValueError(f"axis name '{self.name}' must be a Python identifier (M, rows, ...)")
        for label in ("default", "cpu_default"):
            value = getattr(self, label)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"axis '{self.name}': {label} must be a positive int, "
                                 f"got {value!r}")

    def default_for(self, has_cuda: bool) -> int | None:
        if not has_cuda and self.cpu_default is not None:
            return self.cpu_default
        return self.default


class Shape(Mapping):
    """axis name -> positive int, in declaration order; hashable, immutable.

    `text()` is the canonical key ('M=16,N=4096,K=4096'), which `parse_shape`
    reads back; `label()` is for people ('M=16 N=4096 K=4096', powers of two
    past 2^16 as 2^k).
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping | Iterable[tuple[str, int]]):
        pairs = items.items() if isinstance(items, Mapping) else items
        object.__setattr__(self, "_items", tuple((str(k), int(v)) for k, v in pairs))

    def __setattr__(self, name, value):
        raise AttributeError("Shape is immutable")

    def __getitem__(self, axis: str) -> int:
        for name, value in self._items:
            if name == axis:
                return value
        raise KeyError(axis)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        if isinstance(other, Shape):
            return self._items == other._items
        if isinstance(other, Mapping):
            return dict(self._items) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"Shape({', '.join(f'{k}={v}' for k, v in self._items)})"

    def __reduce__(self):
        return (Shape, (self._items,))

    def text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self._items)

    def label(self) -> str:
        return " ".join(f"{k}={format_size(v)}" for k, v in self._items)

    def slug(self) -> str:
        """For file names: the bare number for one axis (square-cuda-16777216), else
        'M16_N4096_K4096'."""
        if len(self._items) == 1:
            return str(self._items[0][1])
        return "_".join(f"{k}{v}" for k, v in self._items)


# ---------------------------------------------------------------- what users type


def parse_shape(text: str) -> dict[str, int]:
    """'M=4096,N=4096,K=128' -> {'M': 4096, 'N': 4096, 'K': 128}; sizes as parse_size reads
    them (2^12, 4k). Which axes exist is checked later, against the family."""
    shape: dict[str, int] = {}
    for item in str(text).split(","):
        name, value = _assignment(item, text, "--shape M=4096,N=4096,K=128")
        if name in shape:
            raise UsageError(f"invalid shape '{text}': axis '{name}' given twice")
        shape[name] = parse_size(value)
    return shape


def parse_axis(text: str) -> tuple[str, tuple[int, ...]]:
    """'K=64,128,256' -> ('K', (64, 128, 256)): one axis swept over values."""
    from gpubench.parsing import parse_sizes

    name, values = _assignment(text, text, "--axis K=64,128,256")
    return name, parse_sizes(values)


def _assignment(item: str, whole: str, example: str) -> tuple[str, str]:
    name, sep, value = str(item).partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise UsageError(f"invalid shape '{whole}': expected AXIS=VALUE items, e.g. {example}")
    if not _AXIS_NAME.match(name):
        raise UsageError(f"invalid shape '{whole}': '{name}' is not an axis name")
    return name, value


# ---------------------------------------------------------------- checked against a family


def check_axes(family: str, axes: tuple[Axis, ...], given: Mapping, *, complete: bool) -> None:
    """Unknown axes are errors; with `complete`, so is a missing one."""
    names = [a.name for a in axes]
    for name in given:
        if name not in names:
            raise UsageError(f"family '{family}' has no axis '{name}'{did_you_mean(name, names)}"
                             f"; its axes: {', '.join(names)}")
    if complete:
        for name in names:
            if name not in given:
                raise UsageError(f"family '{family}': the shape {_text(given)} lacks axis "
                                 f"'{name}'; give every axis ({', '.join(names)}), e.g. "
                                 f"--shape {_example(axes)}")


def make_shape(family: str, axes: tuple[Axis, ...], given: Mapping) -> Shape:
    """A complete, checked Shape in the family's axis order."""
    check_axes(family, axes, given, complete=True)
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"family '{family}': axis '{name}' must be a positive integer, "
                             f"got {value!r}")
    return Shape((a.name, given[a.name]) for a in axes)


def sweep(family: str, axes: tuple[Axis, ...], swept: Mapping[str, tuple[int, ...]],
          has_cuda: bool) -> list[Shape]:
    """The cartesian product of the swept axes, every other axis at its default."""
    check_axes(family, axes, swept, complete=False)
    values = []
    for axis in axes:
        if axis.name in swept:
            values.append(tuple(swept[axis.name]))
            continue
        default = axis.default_for(has_cuda)
        if default is None:
            raise UsageError(f"family '{family}': axis '{axis.name}' has no default; sweep it "
                             f"too (--axis {axis.name}=...) or give whole shapes with --shape")
        values.append((default,))
    return [Shape(zip([a.name for a in axes], combo, strict=True))
            for combo in itertools.product(*values)]


def _text(given: Mapping) -> str:
    return ",".join(f"{k}={v}" for k, v in given.items()) or "(empty)"


def _example(axes: tuple[Axis, ...]) -> str:
    return ",".join(f"{a.name}={a.default or 1024}" for a in axes)


@dataclass(frozen=True)
class ShapeChoice:
    """What the user asked for, before a family checks it: sizes (one number per shape),
    whole shapes, and axis sweeps. `origin` names a suite file and key ('' = the command
    line), so an error is reported against the right place and with the right exit code."""

    sizes: tuple[int, ...] = ()
    shapes: tuple[Mapping, ...] = ()
    axes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    origin: str = ""

    def __bool__(self) -> bool:
        return bool(self.sizes or self.shapes or self.axes)

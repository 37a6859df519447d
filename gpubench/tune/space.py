"""A variant's config space: the points `gpubench tune` races, read, named and serialised.

Two sources, one type (TuneConfig):
- a Triton kernel's own `@triton.autotune` configs, read from the Autotuner object the
  kernel module defines (duck-typed: `.configs`, each with `.kwargs`, `.num_warps`,
  `.num_stages`), never re-declared in the spec;
- a CUDA variant's declared space, `tune={"BLOCK": (128, 256, 512)}` in its spec: the
  cartesian product, in declaration order, each point built with `-DNAME=value` flags.

A config point travels to the worker inside the task's variant name, "VARIANT@INDEX"
(a spec's variant names cannot hold '@'), so each config is a point of its own in the
run record and `compare` joins two tune records config by config.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpubench.codec import Record

SEPARATOR = "@"


@dataclass(frozen=True)
class TuneConfig(Record):
    """One point of a space: its position in declaration order and what it sets."""

    DERIVED = ("label",)

    index: int
    params: Mapping[str, object] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None

    @property
    def label(self) -> str:
        """'BLOCK_M=64 BLOCK_N=128 w4 s3': what a person reads, and what a pinned file
        matches (an index would silently point elsewhere once the list is edited)."""
        parts = [f"{k}={v}" for k, v in self.params.items()]
        if self.num_warps is not None:
            parts.append(f"w{self.num_warps}")
        if self.num_stages is not None:
            parts.append(f"s{self.num_stages}")
        return " ".join(parts) or "(default)"



def config_name(variant: str, index: int) -> str:
    """The task's variant name for config `index`: 'triton_tc@3'."""
    return f"{variant}{SEPARATOR}{index}"


def split_name(name: str) -> tuple[str, int | None]:
    """'triton_tc@3' -> ('triton_tc', 3); a plain variant name -> (name, None)."""
    base, sep, index = name.rpartition(SEPARATOR)
    if not sep or not index.isdigit():
        return name, None
    return base, int(index)


def triton_space(autotuner) -> tuple[TuneConfig, ...]:
    """The autotuner's configs as TuneConfigs, in its own order."""
    return tuple(TuneConfig(i, dict(getattr(c, "kwargs", {}) or {}),
                            getattr(c, "num_warps", None), getattr(c, "num_stages", None))
                 for i, c in enumerate(autotuner.configs))


def is_autotuner(value) -> bool:
    """Triton's Autotuner, told without importing triton: its class name and the two
    attributes tune reads (`configs`, and `fn`, the wrapped kernel)."""
    return type(value).__name__ == "Autotuner" and hasattr(value, "configs") \
        and hasattr(value, "fn")


def autotuners(namespace: Mapping[str, object]) -> list[tuple[str, object]]:
    """(name, Autotuner) of a kernel module's globals, in definition order."""
    return [(name, value) for name, value in namespace.items() if is_autotuner(value)]


def declared_space(space: Mapping[str, Sequence]) -> tuple[TuneConfig, ...]:
    """A spec's `tune={NAME: values}` as the cartesian product, the first name slowest."""
    names = list(space)
    return tuple(TuneConfig(i, dict(zip(names, values, strict=True)))
                 for i, values in enumerate(itertools.product(*(space[n] for n in names))))


def define_flags(config: TuneConfig) -> tuple[str, ...]:
    """The compiler flags of a declared point: ('-DBLOCK=256', ...)."""
    return tuple(f"-D{name}={value}" for name, value in config.params.items())


def space_problem(space) -> str | None:
    """Why a spec's `tune=` cannot be a space, or None: a dict of macro names (C
    identifiers) to non-empty lists of ints or identifier-like strings (they become -D
    flags, so nothing a shell or compiler would read as another flag)."""
    if not isinstance(space, Mapping) or not space:
        return "tune= must be a non-empty dict {MACRO: (value, ...)}"
    for name, values in space.items():
        if not isinstance(name, str) or not name.isidentifier():
            return f"tune= key {name!r} is not a C identifier"
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            return f"tune={{{name!r}: ...}} needs a non-empty tuple of values"
        for value in values:
            plain = isinstance(value, int) and not isinstance(value, bool)
            if not plain and not (isinstance(value, str) and value.isidentifier()):
                return f"tune={{{name!r}: ...}}: {value!r} is not an int or an identifier"
    return None

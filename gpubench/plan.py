"""Which points to run: families x dtypes x sizes x variants, and which to skip and why.

Pure: takes loaded families and this machine's facts, returns an ordered list.
Points come grouped by (family, dtype, size) with the baseline first in each
group, so that every group's speedups can be computed as soon as it completes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from gpubench.errors import UsageError, unknown_name
from gpubench.spec import Family, Machine, Variant


@dataclass(frozen=True)
class Point:
    family: Family
    variant: Variant
    size: int
    dtype: str
    seed: int
    skip: str | None = None  # why it will not run here, or None

    @property
    def group(self) -> tuple[str, str, int]:
        return (self.family.name, self.dtype, self.size)


def choose_dtypes(family: Family, requested: tuple[str, ...] | None) -> tuple[str, ...]:
    """The dtypes to run: float32 by default, 'all' for every one the family declares."""
    if not requested:
        return ("float32",) if "float32" in family.dtypes else family.dtypes[:1]
    if "all" in requested:
        return family.dtypes
    chosen = tuple(d for d in requested if d in family.dtypes)
    if not chosen:
        raise UsageError(f"family '{family.name}' has no {', '.join(requested)}; "
                         f"it supports {', '.join(family.dtypes)}")
    return chosen


def choose_variants(family: Family, requested: tuple[str, ...]) -> tuple[Variant, ...]:
    """The requested variants of this family, baseline always included (speedups need it)."""
    if not requested:
        return _baseline_first(family.variants)
    picked = [v for v in family.variants if v.name in requested]
    if not picked:
        return ()
    if family.baseline is not None and family.baseline not in picked:
        picked.append(family.baseline)
    return _baseline_first(tuple(picked))


def check_variant_names(families: list[Family], requested: tuple[str, ...]) -> None:
    """Every requested variant must exist in at least one chosen family."""
    known = {v.name for f in families for v in f.variants}
    for name in requested:
        if name not in known:
            raise unknown_name("variant", name, known)


def group_seed(base_seed: int, family: str, dtype: str, size: int) -> int:
    """A stable per-group seed, so two groups never share their random inputs."""
    mixed = zlib.crc32(f"{family}/{dtype}/{size}".encode())
    return (base_seed * 1_000_003 + mixed) % (2**31 - 2)


def plan_points(
    families: list[Family],
    machine: Machine,
    sizes: dict[str, tuple[int, ...]] | None = None,
    dtypes: tuple[str, ...] | None = None,
    variants: tuple[str, ...] = (),
    base_seed: int = 0,
) -> list[Point]:
    """Every point in run order, each with its skip reason decided up front.

    `sizes` maps a family to its sizes; a family not in it runs its defaults.
    """
    check_variant_names(families, variants)
    points: list[Point] = []
    for family in families:
        chosen = choose_variants(family, variants)
        if not chosen:
            continue
        family_sizes = (sizes or {}).get(family.name) or family.default_sizes(machine)
        if not family_sizes:
            raise UsageError(f"family '{family.name}' declares no default sizes: pass --sizes")
        for dtype in choose_dtypes(family, dtypes):
            for size in family_sizes:
                seed = group_seed(base_seed, family.name, dtype, size)
                for variant in chosen:
                    skip = variant.unavailable_reason(dtype, machine)
                    points.append(Point(family, variant, size, dtype, seed, skip))
    if not points:
        raise UsageError("nothing to run: no chosen family has the chosen variants")
    return points


def _baseline_first(variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    return tuple(sorted(variants, key=lambda v: not v.baseline))


def runnable_variants(family: Family, names: tuple[str, ...], dtype: str | None,
                      machine: Machine) -> list[Variant]:
    """For the profilers: the variants named (each must run here), or all that run here."""
    chosen = []
    for name in names or tuple(v.name for v in family.variants):
        try:
            variant = family.variant(name)
        except KeyError:
            raise unknown_name("variant", name, [v.name for v in family.variants]) from None
        reason = variant.unavailable_reason(dtype or "float32", machine)
        if reason and names:
            raise UsageError(f"variant '{name}' cannot run here: {reason}")
        if not reason:
            chosen.append(variant)
    return chosen

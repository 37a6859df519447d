"""Which points to run: families x dtypes x shapes x variants, and which to skip and why.

Pure: takes loaded families, the user's shape choices and this machine's facts,
returns an ordered list. Points come grouped by (family, dtype, shape) with the
baseline first in each group, so that every group's speedups can be computed as
soon as it completes. A Point is also where a planned point becomes a Task for
the worker and a Result for the files: one mapping for run, ncu, nsys and trace.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from gpubench.errors import ConfigError, UsageError, unknown_name
from gpubench.families.cost import Cost, cost_of
from gpubench.families.spec import Family, Machine, Variant
from gpubench.records.build_info import BuildInfo
from gpubench.records.events import PointRef
from gpubench.records.point import PointKey, Task
from gpubench.records.result import ITEMSIZE, Result
from gpubench.records.shape import Shape, ShapeChoice, sweep
from gpubench.timing.check_result import CheckResult
from gpubench.timing.device_work import DeviceWork
from gpubench.timing.measurement import Measurement
from gpubench.timing.settings import TimingSettings


@dataclass(frozen=True)
class Point:
    family: Family
    variant: Variant
    shape: Shape
    dtype: str
    seed: int
    skip: str | None = None  # why it will not run here, or None
    # flops and bytes_moved, evaluated once where a broken cost model is contained
    # (families/cost.py); None: evaluated when first needed
    cost: Cost | None = None

    @property
    def group(self) -> tuple[str, str, Shape]:
        return (self.family.name, self.dtype, self.shape)

    def key(self, mode: str) -> PointKey:
        return PointKey(self.family.name, self.variant.name, self.dtype, self.shape, mode)

    def ref(self) -> PointRef:
        """The point as events name it (records/events.py)."""
        return PointRef(self.family.name, self.variant.name, self.shape.label(), self.dtype,
                        bool(self.skip))

    def task(self, task_id: int, timing: TimingSettings | None = None) -> Task:
        """The worker's view of this point (the only place a Task is built)."""
        return Task(task_id, self.family.name, str(self.family.directory), self.variant.name,
                    self.dtype, self.shape, self.seed, timing or TimingSettings())

    @property
    def napkin(self) -> Cost:
        """The point's cost: the one planned, else evaluated now (contained as well)."""
        if self.cost is not None:
            return self.cost
        return cost_of(self.family, self.shape, ITEMSIZE.get(self.dtype, 4))

    @property
    def spec_error(self) -> str | None:
        """Why the family's own code fails at this point (its ERROR reason), or None."""
        return self.napkin.error

    def result(self, mode: str, status: str, *, error: str | None = None,
               measurement: Measurement | None = None, check: CheckResult | None = None,
               build: BuildInfo | None = None, device: str = "",
               device_work: DeviceWork | None = None) -> Result:
        """A Result of this point, with its identity and napkin math."""
        cost = self.napkin
        return Result(key=self.key(mode), kind=self.variant.kind, status=status,
                      baseline=self.variant.baseline, device=device,
                      precision=self.variant.precision_for(self.dtype) or "",
                      flops=cost.flops, bytes_moved=cost.bytes_moved, seed=self.seed,
                      measurement=measurement, check=check, build=build or BuildInfo(), error=error,
                      device_work=device_work)


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


def choose_shapes(family: Family, choice: ShapeChoice, machine: Machine) -> tuple[Shape, ...]:
    """The shapes to run: the user's (sizes, whole shapes, sweeps), else the family's
    defaults. Errors name family and axis; from a suite file they are config errors."""
    try:
        shapes = _chosen_shapes(family, choice, machine) if choice else \
            family.default_shapes(machine)
    except UsageError as exc:
        if choice.origin:
            raise ConfigError(f"{choice.origin}: {exc}") from None
        raise
    if not shapes:
        lacking = family.axes_without_default(machine)
        which = (f"axis {lacking[0]} has" if len(lacking) == 1
                 else f"axes {', '.join(lacking)} have")
        raise UsageError(f"family '{family.name}' declares no default shapes and {which} no "
                         f"default: pass --shape or --sizes")
    return tuple(dict.fromkeys(shapes))  # duplicates dropped, order kept


def _chosen_shapes(family: Family, choice: ShapeChoice, machine: Machine) -> list[Shape]:
    shapes = [family.shape_from_size(n) for n in choice.sizes]
    shapes += [family.shape_of(dict(s)) for s in choice.shapes]
    if choice.axes:
        swept = sweep(family.name, family.axes, dict(choice.axes), machine.has_cuda)
        shapes += [family.shape_of(s) for s in swept]
    return shapes


def check_variant_names(families: list[Family], requested: tuple[str, ...]) -> None:
    """Every requested variant must exist in at least one chosen family."""
    known = {v.name for f in families for v in f.variants}
    for name in requested:
        if name not in known:
            raise unknown_name("variant", name, known)


def group_seed(base_seed: int, family: str, dtype: str, shape: Shape) -> int:
    """A stable per-group seed, so two groups never share their random inputs."""
    mixed = zlib.crc32(f"{family}/{dtype}/{shape.text()}".encode())
    return (base_seed * 1_000_003 + mixed) % (2**31 - 2)


def plan_points(
    families: list[Family],
    machine: Machine,
    choices: dict[str, ShapeChoice] | None = None,
    dtypes: tuple[str, ...] | None = None,
    variants: tuple[str, ...] = (),
    base_seed: int = 0,
) -> list[Point]:
    """Every point in run order, each with its skip reason decided up front.

    `choices` maps a family to the user's shape choice; a family not in it runs its
    defaults.
    """
    check_variant_names(families, variants)
    points: list[Point] = []
    for family in families:
        chosen = choose_variants(family, variants)
        if not chosen:
            continue
        shapes = choose_shapes(family, (choices or {}).get(family.name, ShapeChoice()), machine)
        for dtype in choose_dtypes(family, dtypes):
            for shape in shapes:
                seed = group_seed(base_seed, family.name, dtype, shape)
                cost = cost_of(family, shape, ITEMSIZE.get(dtype, 4))
                for variant in chosen:
                    skip = variant.unavailable_reason(dtype, machine) or \
                        variant.shape_reason(shape)
                    points.append(Point(family, variant, shape, dtype, seed, skip, cost))
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

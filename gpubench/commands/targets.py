"""What a profiler command (ncu, nsys) profiles: one family, its variants, one shape and dtype,
as planned Points (so the task each profiler runs is built the way `run` builds it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gpubench.errors import UsageError
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.families.spec import Family
from gpubench.records.shape import ShapeChoice
from gpubench.report.files import new_run_dir
from gpubench.run.machine import detect_machine
from gpubench.run.plan import Point, choose_dtypes, choose_shapes, group_seed, runnable_variants


@dataclass(frozen=True)
class TargetChoice:
    """What a profiler command was asked to profile, as the command line gave it: one family,
    some of its variants (none: every one that runs here), at most one shape and dtype."""

    family: str | None
    variants: tuple[str, ...] = ()
    shapes: ShapeChoice = field(default_factory=ShapeChoice)
    dtype: str | None = None  # None: float32 (or the family's first dtype)
    kernels_dirs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ProfileTarget:
    family: Family
    points: list[Point]  # one per variant, same shape and dtype
    run_dir: Path

    def describe(self) -> str:
        names = ", ".join(p.variant.name for p in self.points)
        first = self.points[0]
        return f"{self.family.name} ({names}), {first.shape.label()}, {first.dtype}"


def resolve_target(chosen: TargetChoice, out: Path | None, tool: str, seed: int = 0,
                   largest: bool = True) -> ProfileTarget:
    """Needs a CUDA GPU. Defaults: every variant that runs here, the family's largest
    default shape (profilers want a size that fills the GPU; `largest=False`: the
    smallest, for a checker that slows every access down), float32."""
    machine = detect_machine("cuda")
    dirs = resolve_families((chosen.family,), family_dirs(chosen.kernels_dirs))
    family = load_family(chosen.family, dirs[chosen.family])
    variants = runnable_variants(family, chosen.variants, chosen.dtype, machine)
    shapes = choose_shapes(family, chosen.shapes, machine)
    if chosen.shapes and len(shapes) > 1:
        raise UsageError(f"{tool} profiles one shape at a time; got {len(shapes)}: "
                         f"{', '.join(s.text() for s in shapes)}")
    shape = shapes[-1] if largest else shapes[0]
    dtype = chosen.dtype or choose_dtypes(family, None)[0]
    run_dir = out or new_run_dir(Path("profiles"), [family.name, tool])
    run_dir.mkdir(parents=True, exist_ok=True)
    seed = group_seed(seed, family.name, dtype, shape)
    points = [Point(family, variant, shape, dtype, seed) for variant in variants]
    return ProfileTarget(family, points, run_dir)

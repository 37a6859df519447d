"""What a profiler command (ncu, nsys, sanitize) profiles: one family, its variants, one shape
and dtype, as planned Points (so the task each profiler runs is built the way `run` builds
it); and the request those commands share: that target, where the files go, and --json."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from gpubench import safe_text
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
class TargetRequest:
    """What every profiler-style command is asked besides its tool's own settings, which a
    subclass adds. `out` and `as_json` are keyword-only, so a subclass's own fields follow
    `target` in its positional order."""

    target: TargetChoice  # FAMILY, --variant, --size/--shape, --dtype, --kernels-dir
    _: KW_ONLY
    out: Path | None = None  # --out; None: profiles/<run-id>
    as_json: bool = False  # --json: the tool's findings on stdout, progress on stderr

    def resolve(self, tool: str, largest: bool = True) -> ProfileTarget:
        """The points and the run folder (resolve_target); needs a CUDA GPU."""
        return resolve_target(self.target, self.out, tool, largest=largest)


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


def show_heading(console: Console, outcome) -> bool:
    """How a profiler's view of one variant starts: a rule with its name, then its error, or
    a warning that its check failed (what was profiled is then a wrong kernel's). An outcome
    has .variant, .error and .check; False when it failed, with nothing more to show."""
    console.print(Rule(escape(safe_text.one_line(outcome.variant))))
    if outcome.error is not None:
        console.print(f"[bold red]error:[/] {escape(str(outcome.error))}", soft_wrap=True)
        return False
    if outcome.check and not outcome.check.passed:
        console.print("[bold red]warning:[/] this variant FAILS its correctness check")
    return True

"""What a profiler command (ncu, nsys) profiles: one family, its variants, one size and dtype."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpubench.discovery import family_dirs, load_family, resolve_families
from gpubench.machine import detect_machine
from gpubench.plan import choose_dtypes, runnable_variants
from gpubench.report.files import new_run_dir
from gpubench.spec import Family, Variant


@dataclass(frozen=True)
class ProfileTarget:
    family: Family
    variants: list[Variant]
    size: int
    dtype: str
    run_dir: Path

    def describe(self) -> str:
        names = ", ".join(v.name for v in self.variants)
        return f"{self.family.name} ({names}), size {self.size}, {self.dtype}"


def resolve_target(family_name: str, kernels_dirs: tuple[Path, ...], variant_names: tuple[str, ...],
                   size: int | None, dtype: str | None, out: Path | None,
                   tool: str) -> ProfileTarget:
    """Needs a CUDA GPU. Defaults: every variant that runs here, the family's largest
    default size (profilers want a size that fills the GPU), float32."""
    machine = detect_machine("cuda")
    dirs = resolve_families((family_name,), family_dirs(kernels_dirs))
    family = load_family(family_name, dirs[family_name])
    variants = runnable_variants(family, variant_names, dtype, machine)
    size = size or (family.sizes or family.default_sizes(machine))[-1]
    dtype = dtype or choose_dtypes(family, None)[0]
    run_dir = out or new_run_dir(Path("profiles"), [family.name, tool])
    run_dir.mkdir(parents=True, exist_ok=True)
    return ProfileTarget(family, variants, size, dtype, run_dir)

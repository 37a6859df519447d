"""`ab --explain` (and `bisect --explain` through its confirming A/B): each FASTER or SLOWER
point's kernels profiled with Nsight Compute, BASE and NEW, one ncu run a side with the hint
sections, and the counters that moved ranked by their share of the time change
(tools/ncu/change.py). Runs after the A/B's worker has stopped, so that ncu has the GPU to
itself. Without ncu (or a GPU) each point says why and the timing verdicts stand.
"""

from __future__ import annotations

from pathlib import Path

from gpubench import errors
from gpubench.families.discovery import load_family
from gpubench.records.ab import PairVerdict
from gpubench.records.kernel_change import KernelChange
from gpubench.run.plan import Point
from gpubench.tools.find import find_gpu_tool
from gpubench.tools.ncu.change import kernel_change
from gpubench.tools.ncu.points import NcuOptions, Profiled, profile_points

EXPLAINED = ("FASTER", "SLOWER")


def explain_pairs(family: str, base_dir: Path, points: list[Point],
                  verdicts: list[PairVerdict], out: Path) -> list[KernelChange]:
    """One KernelChange per (variant, shape, dtype) some mode read FASTER or SLOWER; the
    reports go to out/explain/. `points` are NEW's, as the A/B planned them."""
    moved = list(dict.fromkeys((v.variant, v.dtype, v.shape) for v in verdicts
                               if v.verdict in EXPLAINED))
    if not moved:
        return []
    try:
        ncu = find_gpu_tool("ncu")
    except errors.GpubenchError as exc:
        return [KernelChange(*key, error=f"{exc}; the timing verdicts stand") for key in moved]
    base = load_family(family, base_dir)
    by_key = {(p.variant.name, p.dtype, p.shape.text()): p for p in points}
    options = NcuOptions(ncu_path=ncu)
    return [_explain(by_key[key], base, options, out / "explain") for key in moved
            if key in by_key]


def _explain(point: Point, base_family, options: NcuOptions, out: Path) -> KernelChange:
    variant, shape, dtype = point.variant.name, point.shape.text(), point.dtype
    twin = next((v for v in base_family.variants if v.name == variant), None)
    if twin is None:
        return KernelChange(variant, dtype, shape, error="BASE has no such variant")
    sides = {}
    for side, each in (("base", Point(base_family, twin, point.shape, dtype, point.seed)),
                       ("new", point)):
        folder = out / f"{side}-{dtype}"  # reports are named family-variant-shape
        folder.mkdir(parents=True, exist_ok=True)
        sides[side] = profile_points([each], folder, options)[0]
    problem = _problem(sides)
    if problem:
        return KernelChange(variant, dtype, shape, error=problem)
    return kernel_change(sides["base"].main, sides["new"].main, variant, dtype, shape)


def _problem(sides: dict[str, Profiled]) -> str:
    """Why the two sides cannot be compared ('' when they can)."""
    for side, outcome in sides.items():
        if outcome.error is not None:
            return f"ncu on {side.upper()} failed: {outcome.error}"
        if outcome.main is None:
            return f"ncu saw no kernel of {side.upper()}"
    return ""

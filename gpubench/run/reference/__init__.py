"""gpubench's own reference kernels (not a user family): what `run --devices` times on
each device alone and then on all at once to measure interference (interference.py)."""

from __future__ import annotations

from pathlib import Path

INTERFERENCE_DIR = Path(__file__).resolve().parent / "interference"


def reference_points(device: str, seed: int) -> list:
    """The interference reference's points for `device`: bf16 on a GPU, fp32 on a CPU."""
    from gpubench.families.discovery import load_family
    from gpubench.families.spec import Machine
    from gpubench.run.plan import Point

    family = load_family("interference", INTERFERENCE_DIR)
    machine = Machine(has_cuda=device == "cuda", has_triton=False)
    dtype = "bfloat16" if device == "cuda" else "float32"
    variant = family.variants[0]
    return [Point(family, variant, shape, dtype, seed) for shape in family.default_shapes(machine)]


def is_own_reference(family_dir: str | Path) -> bool:
    """Whether a task is gpubench's own interference reference (torch.matmul): timed
    without the defences against a gamed timer (input rotation, the fresh-input probe),
    which it does not need and which cost ~1.5 s a probe at 8192^3 (fresh inputs and their
    float64 references), three rounds of it before a several-GPU run measures anything.
    Known by its folder, which no spec can claim."""
    return Path(family_dir).resolve() == INTERFERENCE_DIR

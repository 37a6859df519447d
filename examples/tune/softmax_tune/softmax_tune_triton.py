"""kernels/softmax's Triton kernel (one row per program) with its warps autotuned: the space
`gpubench tune softmax_tune --variant triton_tune` races.

softmax_triton.py picks the warps by a rule (64 bytes of the row per thread, 4-16 warps);
here the autotuner's list is 1 to 32 warps, so tune can say whether the rule's pick is
tied with the best. num_stages is left at its default: the kernel has no loop to pipeline.
One config under the Triton interpreter (CPU), where Triton's autotuner could not time two.
"""

import importlib.util
import os
from pathlib import Path

import triton


def _kernel_module(family: str, name: str):
    """A module of the repository's kernels/ folder, by path (gpubench imports kernel
    files by path, so a plain `import` would not find it)."""
    path = Path(__file__).resolve().parents[3] / "kernels" / family / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_tune_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_base = _kernel_module("softmax", "softmax_triton")
MAX_COLS = _base.MAX_COLS
if os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on", "y"):
    WARPS = (4,)
else:
    WARPS = (1, 2, 4, 8, 16, 32)

softmax_tune_kernel = triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in WARPS], key=["cols"])(
    _base.softmax_kernel)


def softmax_tune(x, out):
    rows, cols = x.shape
    if cols > MAX_COLS:
        raise ValueError(f"softmax_tune holds a row in one block: cols={cols} > {MAX_COLS}")
    softmax_tune_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0),
                                 BLOCK=triton.next_power_of_2(cols))

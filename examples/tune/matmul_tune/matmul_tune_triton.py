"""matmul_tc's kernel with a wide autotune space: what `gpubench tune` races (>= 16 configs).

The kernel is kernels/matmul/matmul_tc_triton.py's (loaded from there by path, unchanged);
only the config list differs. Triton's own autotuner would time all 18 once with do_bench on the
first call; `gpubench tune matmul --variant triton_tune` checks each on its own and races
them with CIs instead, and `gpubench run` then runs the pinned one.

The space, for 16-bit inputs (K step 64 = 128 bytes): six tile shapes, 64-256 wide, x
three (warps, stages) pairs. Shared memory, the largest: a 256 x 128 tile with K step 64
reads (256 + 128) x 64 x 2 B = 48 KiB per stage, 192 KiB at 4 stages: under the H100's
and H200's 227 KiB per block. Under the Triton interpreter (CPU) the space is one small
config: the real ones would run thousands of times slower, and with two or more Triton's
autotuner would try to benchmark them on a GPU there is not.
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


def _config(bm, bn, warps, stages, bk=64):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


if os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "yes", "on", "y"):
    SPACE = [_config(32, 32, 4, 1, bk=32)]
else:
    SPACE = [_config(bm, bn, warps, stages)
             for bm, bn in ((64, 128), (128, 64), (128, 128), (64, 256), (128, 256), (256, 128))
             for warps, stages in ((4, 3), (8, 3), (8, 4))]

# The Heuristics-wrapped JIT kernel under matmul_tc's autotuner, wrapped in a new one.
matmul_tune_kernel = triton.autotune(configs=SPACE, key=["M", "N", "K"])(
    _kernel_module("matmul", "matmul_tc_triton").matmul_tc_kernel.fn)


def matmul_tune(a, b, out):
    """out = a @ b on tensor cores (fp16/bf16), with the config tune pinned, if any."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
    matmul_tune_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                             b.stride(1), out.stride(0), out.stride(1))

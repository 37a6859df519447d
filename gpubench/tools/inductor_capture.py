"""Capture the code Inductor writes for a callable (`gpubench eject`), through torch's hooks.

On a GPU: `torch._inductor.utils.run_and_get_code` compiles and runs the reference once
(autotuning included) and hands back each graph's output code; the launch config the
autotuner kept is read off the loaded kernels. On a machine without one, Inductor is asked
for Triton anyway: `cpu_backend="triton"` makes it write Triton kernels for CPU tensors, and
a stand-in driver names an sm_90 target so its codegen (which hashes the backend) runs. The
code is taken from the same hook run_and_get_code uses, `GraphLowering.save_output_code`,
which Inductor calls before it compiles the module; compiling it then fails (no Triton
backend runs on this CPU) and is expected to. Block sizes there are a rule of ours (below),
not an autotuner's: the interpreter only checks the result.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from unittest import mock

from gpubench.families.eject_source import InductorKernel, LaunchConfig, find_kernels

# Elements one program holds on the codegen-only path: 1024, a typical Inductor XBLOCK
# for pointwise kernels, and few enough that the interpreter's numpy blocks stay small.
_CPU_BLOCK_ELEMENTS = 1024


@dataclass(frozen=True)
class Capture:
    code: str  # the last graph's output module (one graph for a family's reference)
    configs: dict  # kernel name -> LaunchConfig
    tuned: bool  # False: configs from our rule (codegen only), not Inductor's autotuner


def capture(reference, inputs, mode: str) -> Capture:
    """Compile `reference(*inputs)` with torch.compile at `mode` (default, max-autotune) and
    capture what Inductor wrote for it. Caches are off so that codegen runs (a cache hit
    would hand back a compiled module without writing its code again)."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(reference, mode=None if mode == "default" else mode,
                             dynamic=False)
    on_gpu = inputs[0].is_cuda
    with torch._inductor.config.patch(force_disable_caches=True):
        if on_gpu:
            from torch._inductor.utils import run_and_get_code

            _, codes = run_and_get_code(compiled, *inputs)
        else:
            codes = _codegen_only(compiled, inputs)
    if not codes:
        raise RuntimeError("torch.compile wrote no output code for the reference")
    code = codes[-1]
    kernels = find_kernels(code)
    if on_gpu:
        tuned = _autotuned(kernels)
        if len(tuned) == len(kernels):
            return Capture(code, tuned, tuned=True)
        # The autotuner's choice was not found where this torch keeps it (seen on torch
        # 2.11, an H100, 2026-11-25: PyCodeCache held no launcher for softmax's kernel):
        # the kernels still run with our rule's configs, and the file says they are not
        # Inductor's (its time may then differ from the compiled original's).
        return Capture(code, {k.name: tuned.get(k.name) or rule_config(k) for k in kernels},
                       tuned=False)
    return Capture(code, {k.name: rule_config(k) for k in kernels}, tuned=False)


def _codegen_only(compiled, inputs) -> list[str]:
    import torch
    from torch._inductor.graph import GraphLowering

    codes: list[str] = []

    def keep_and_stop(code: str) -> None:
        codes.append(code)
        raise _CodegenDone  # stop before Inductor compiles kernels for a GPU we lack

    with _sm90_codegen_target(), torch._inductor.config.patch(cpu_backend="triton"), \
            mock.patch.object(GraphLowering, "save_output_code", keep_and_stop):
        try:
            compiled(*inputs)
        except Exception:  # Inductor wraps our _CodegenDone in an error of its own
            if not codes:
                raise
    return codes


class _CodegenDone(Exception):
    """Raised from the output-code hook once the code is in hand (codegen-only path)."""


class _Sm90Target:
    """A Triton driver that only names its target: enough for Inductor's codegen."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)  # an H100's: sm_90, 32-thread warps


@contextlib.contextmanager
def _sm90_codegen_target():
    from torch.utils import _triton
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(_Sm90Target())
    _triton.triton_backend.cache_clear()
    try:
        yield
    finally:
        driver._active = saved
        _triton.triton_backend.cache_clear()
        _triton.triton_hash_with_backend.cache_clear()


def rule_config(kernel: InductorKernel) -> LaunchConfig:
    """Block sizes for a kernel no autotuner has seen: a reduction loops R0_BLOCK lanes
    (up to 1024) over one row per program; a persistent reduction holds its whole row
    (R0_BLOCK is fixed in its body) and takes as many rows as fit 1024 elements; a
    pointwise kernel takes 1024 elements (split as 32 x 32 on a 2-D grid)."""
    hints = kernel.size_hints
    row = hints.get("r0_", 1)
    blocks = {}
    if "XBLOCK" in kernel.params:
        per_row = row if kernel.heuristic.endswith("reduction") else 1
        cap = 32 if "YBLOCK" in kernel.params else _CPU_BLOCK_ELEMENTS
        blocks["XBLOCK"] = max(1, min(hints.get("x", 1), cap, _CPU_BLOCK_ELEMENTS // per_row))
        if kernel.heuristic == "reduction":
            blocks["XBLOCK"] = 1
    if "YBLOCK" in kernel.params:
        blocks["YBLOCK"] = max(1, min(hints.get("y", 1), 32))
    if "R0_BLOCK" in kernel.params:
        blocks["R0_BLOCK"] = min(row, _CPU_BLOCK_ELEMENTS)
    return LaunchConfig(blocks, num_warps=4, num_stages=1)


def _autotuned(kernels: list[InductorKernel]) -> dict:
    """Each kernel's config as Inductor's autotuner kept it, read off the loaded wrapper
    module (PyCodeCache keeps the modules it loaded); the kernels it could not find are
    left out (the caller falls back to rule_config)."""
    from torch._inductor.codecache import PyCodeCache

    found = {}
    modules = getattr(PyCodeCache, "modules", None) or []
    for module in reversed(list(modules.values() if isinstance(modules, dict) else modules)):
        for kernel in kernels:
            tuner = getattr(module, kernel.name, None)
            launchers = getattr(tuner, "launchers", None)
            if kernel.name not in found and launchers:
                config = launchers[0].config
                found[kernel.name] = LaunchConfig(dict(config.kwargs), config.num_warps,
                                                  config.num_stages)
    return found

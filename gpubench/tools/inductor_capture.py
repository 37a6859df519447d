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
    # On a GPU, the kernels whose launch config was not seen (our rule's configs instead)
    unseen: tuple[str, ...] = ()


def capture(reference, inputs, mode: str) -> Capture:
    """Compile `reference(*inputs)` with torch.compile at `mode` (default, max-autotune) and
    capture what Inductor wrote for it. Caches are off so that codegen runs (a cache hit
    would hand back a compiled module without writing its code again)."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(reference, mode=None if mode == "default" else mode,
                             dynamic=False)
    on_gpu = inputs[0].is_cuda
    # compile_threads=1: no pool of compile processes left behind (a few kernels to build)
    with torch._inductor.config.patch(force_disable_caches=True, compile_threads=1):
        if on_gpu:
            from torch._inductor.utils import run_and_get_code

            with _launches_seen() as seen:
                _, codes = run_and_get_code(compiled, *inputs)
        else:
            codes = _codegen_only(compiled, inputs)
    if not codes:
        raise RuntimeError("torch.compile wrote no output code for the reference")
    code = codes[-1]
    kernels = find_kernels(code)
    if not on_gpu:
        return Capture(code, {k.name: rule_config(k) for k in kernels}, tuned=False)
    unseen = tuple(k.name for k in kernels if k.name not in seen)
    # A kernel whose launch was not seen keeps our rule's config, and the file and the
    # command say which (its time may then differ from the compiled original's).
    return Capture(code, {k.name: seen.get(k.name) or rule_config(k) for k in kernels},
                   tuned=not unseen, unseen=unseen)


@contextlib.contextmanager
def _launches_seen():
    """{kernel name: LaunchConfig} of each Triton kernel as Inductor launched it while the
    block ran. Every torch since 2.1 launches an Inductor kernel through its autotuner's
    `CachingAutotuner.run`, which ends with exactly one launcher left (the one config it
    had, or the winner of benchmarking all of them, or of coordinate descent): read right
    after the launch, that launcher's config is the one Inductor chose, whichever cache or
    module the autotuner lives in (torch 2.11 keeps none that PyCodeCache can find)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    seen: dict = {}
    original = CachingAutotuner.run

    def run(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        chosen = _chosen_config(self)
        name = getattr(self.fn, "__name__", None)
        if chosen is not None and name:
            seen.setdefault(name, chosen)
        return result

    with mock.patch.object(CachingAutotuner, "run", run):
        yield seen


def _chosen_config(tuner) -> LaunchConfig | None:
    """The one launcher's config after a launch; else the one config the autotuner was
    given (then there was nothing to choose); None when neither tells."""
    launchers = list(getattr(tuner, "launchers", None) or ())
    configs = [launcher.config for launcher in launchers]
    if not configs:
        configs = list(getattr(tuner, "configs", None) or ())
    if len(configs) != 1:
        return None
    config = configs[0]
    return LaunchConfig(dict(config.kwargs), config.num_warps, config.num_stages)


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

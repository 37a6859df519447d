"""Load a trick module by path, and the one variant kind the families need beyond gpubench's.

Specs are imported by path (gpubench/families/discovery.py), so this folder is not on
sys.path; gpubench's own `import_kernel_file` gives every module a name of its own and
imports it once per process, so module-level memo tables live as long as the worker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpubench.families.discovery import import_kernel_file
from gpubench.families.spec import Machine, TorchVariant

HERE = Path(__file__).resolve().parent


def trick(name: str):
    """The module tricks/<name>.py."""
    return import_kernel_file(HERE / f"{name}.py", "gpubench_adversarial")


@dataclass(frozen=True)
class GpuTorchVariant(TorchVariant):
    """A PyTorch variant whose trick needs CUDA (streams, events): skipped on a CPU with
    the reason, as a CUDA C++ variant without a CPU version is."""

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        if not machine.has_cuda:
            return "needs a CUDA GPU (its trick is about streams or CUDA events)"
        return super().unavailable_reason(dtype, machine)

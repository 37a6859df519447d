"""Deciding where a run happens: a CUDA GPU if there is one (or asked for), else the CPU."""

from __future__ import annotations

import importlib.util

from gpubench.errors import EnvironmentProblem
from gpubench.families.spec import Machine


def detect_machine(requested: str = "auto") -> Machine:
    """This machine's facts. `requested` is 'auto', 'cuda' or 'cpu' (--device)."""
    import torch

    # torch.cuda.device_count() asks NVML (falling back to CUDA where NVML fails): the
    # parent never runs a kernel, and CUDA's start here (cuInit: 0.97 s with 4 H200s
    # visible, up to 1.5 s beside the workers' own, docs/journal/perf-notes.md) would
    # hold up every worker's start on the same driver. A GPU that NVML sees and CUDA
    # cannot use fails the workers' start, with CUDA's own error.
    has_cuda = torch.cuda.device_count() > 0
    if requested == "cuda" and not has_cuda:
        raise EnvironmentProblem(
            "--device cuda: no CUDA GPU is visible (torch.cuda.device_count() is 0"
            f"; torch {torch.__version__} built for CUDA {torch.version.cuda})"
        )
    use_cuda = has_cuda and requested != "cpu"
    has_triton = importlib.util.find_spec("triton") is not None
    return Machine(has_cuda=use_cuda, has_triton=has_triton,
                   device_name="cuda" if use_cuda else "cpu")


def describe(machine: Machine) -> str:
    """One line on what a run here can and cannot do."""
    if machine.has_cuda:
        return "CUDA GPU: every variant runs; times are CUDA-event timings."
    triton = ("Triton kernels run in the Triton interpreter (correctness only, slow)"
              if machine.has_triton else "Triton is not installed: Triton variants are skipped")
    return ("No CUDA GPU: CUDA variants without a CPU version are skipped; "
            f"{triton}; times are host-clock CPU timings, not GPU numbers.")

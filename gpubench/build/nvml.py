"""What NVML says of every GPU on the machine, without starting CUDA.

Why not torch: `torch.cuda.get_device_capability()` or `device_count()` with a query
starts the driver (cuInit: ~0.3 s with one GPU visible, ~1 s with four, and up to 1.5 s
beside other processes starting theirs, docs/journal/perf-notes.md). The
parent and the builders only need facts NVML has, so they ask it and leave CUDA to the
workers. Here because the build key (key.py) is its lowest user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def each_gpu(query: Callable[[object, object], T]) -> list[T] | None:
    """`query(pynvml, handle)` for every GPU NVML lists, in NVML's order; None without
    nvidia-ml-py, a driver or a GPU's answer (NVML's errors all mean "not known here")."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [query(pynvml, pynvml.nvmlDeviceGetHandleByIndex(index))
                    for index in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return None

"""How long a fresh process takes to start CUDA, step by step (issue 32's worker starts).

    CUDA_VISIBLE_DEVICES=0 python3 scripts/cuda_init_probe.py [cuda-first|nvml-first]

Prints one line: torch's import, torch.cuda.is_available() (cuInit), the device's
properties, the first allocation (the primary context), then pynvml's import, nvmlInit
and one NVML query (the other way round with nvml-first). Run several at once, each
with its own CUDA_VISIBLE_DEVICES, to see what concurrent starts cost, and beside a
process that holds a CUDA context on every GPU to see what a warm driver saves
(docs/journal/perf-notes.md, 2026-11-27, 4 H200s: cuInit 0.27 s with one GPU visible,
0.97 s with four, 0.8-1.5 s for five processes at once; 0.06 s beside a holder).
"""

from __future__ import annotations

import os
import sys
import time

START = time.perf_counter()
MARKS: list[tuple[str, float]] = []


def mark(label: str) -> None:
    MARKS.append((label, time.perf_counter()))


def start_cuda(torch) -> None:
    torch.cuda.is_available()
    mark("is_available")
    torch.cuda.get_device_properties(0)
    mark("props")
    torch.empty(1, device="cuda")
    mark("context+alloc")


def start_nvml() -> None:
    import pynvml

    mark("import pynvml")
    pynvml.nvmlInit()
    mark("nvmlInit")
    pynvml.nvmlDeviceGetClockInfo(pynvml.nvmlDeviceGetHandleByIndex(0), 0)
    mark("nvml query")


def main() -> None:
    import torch

    mark("import torch")
    order = sys.argv[1] if len(sys.argv) > 1 else "cuda-first"
    steps = [lambda: start_cuda(torch), start_nvml]
    for step in steps if order == "cuda-first" else reversed(steps):
        step()
    last, parts = START, []
    for label, at in MARKS:
        parts.append(f"{label} {at - last:.2f}")
        last = at
    print(f"[{os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}] {order} total "
          f"{last - START:.2f}: " + ", ".join(parts), flush=True)


if __name__ == "__main__":
    main()

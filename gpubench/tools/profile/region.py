"""`gpubench.region()`: mark the part of a program that `gpubench profile` should look at."""

from __future__ import annotations

import contextlib

from gpubench.tools.profile.kernels import REGION_PREFIX


@contextlib.contextmanager
def region(name: str = "steady"):
    """Everything launched inside is "the region": `gpubench profile` keeps only its
    kernels (and `--skip-first N` drops its first N instances), so warm-up steps and
    compilation stay out of the table. A torch.profiler range named
    'gpubench.region:<name>', and an NVTX range of the same name for nsys and ncu users;
    costs ~microseconds, a no-op for anything else.

        for step in range(20):
            with gpubench.region("train"):
                train_step()
    """
    import torch

    label = REGION_PREFIX + name
    pushed = torch.cuda.is_available()
    if pushed:
        torch.cuda.nvtx.range_push(label)
    try:
        with torch.profiler.record_function(label):
            yield
    finally:
        if pushed:
            torch.cuda.nvtx.range_pop()

"""Its second group pulls the run folder away mid-run (GPUBENCH_TEST_SABOTAGE names it):
the first group is saved already, the second must not be lost either."""

import os
import shutil

import torch

from gpubench import Family, TorchVariant


def sabotage(x, out):
    torch.mul(x, 2, out=out)
    target = os.environ.get("GPUBENCH_TEST_SABOTAGE")
    if target and x.numel() == 128 and os.path.isdir(target):
        shutil.rmtree(target)
        with open(target, "w") as blocker:  # a file where the folder was
            blocker.write("in the way\n")


family = Family(
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device).to(dtype),),
    reference=lambda x: 2 * x,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(64, 128),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),
        TorchVariant("sabotage", fn=sabotage),
    ),
)

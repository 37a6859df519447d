"""A problem in reference-kernels' format whose ref_kernel returns another shape than its
output slot: row sums kept as a (rows, 1) column, the slot being (rows,). The problem's
check compares shapes, so it decides between a submission that returns the column and
one that returns the slot, as the leaderboard's eval.py lets it. Written for gpubench's
tests."""

import torch
from task import input_t, output_t
from utils import close_enough, device


def ref_kernel(data: input_t) -> output_t:
    x, _sums = data
    return x.to(torch.float64).sum(dim=1, keepdim=True).to(torch.float32)


def generate_input(rows: int, cols: int, seed: int) -> input_t:
    gen = torch.Generator(device=device())
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, device=device(), dtype=torch.float32, generator=gen)
    return x, torch.empty(rows, device=device(), dtype=torch.float32)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    return close_enough(output, ref_kernel(data), rtol=1e-5, atol=1e-4)

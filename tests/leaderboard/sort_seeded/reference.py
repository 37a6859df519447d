"""A sort problem in reference-kernels' format whose generator uses its seed as a value, as
pmpp's sort_py does: row i of the data has mean `seed + i`. Seeds of the size task.yml
lists give 10^5 distinct values; a seed near 2^62 rounds every float32 to one value, and
then a copy of the input "sorts" it. Written for gpubench's tests."""

import torch
from task import input_t, output_t
from utils import close_enough, device


def ref_kernel(data: input_t) -> output_t:
    values, _output = data
    return torch.sort(values)[0]


def generate_input(size: int, seed: int) -> input_t:
    rows = max(1, int(size ** 0.5))
    cols = (size + rows - 1) // rows
    gen = torch.Generator(device=device())
    values = torch.empty((rows, cols), device=device(), dtype=torch.float32)
    for row in range(rows):
        gen.manual_seed(seed + row)
        values[row] = torch.randn(cols, device=device(), generator=gen) + (seed + row)
    values = values.flatten()[:size].contiguous()
    return values, torch.empty_like(values)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    return close_enough(output, ref_kernel(data), rtol=0, atol=0)

"""Right: returns a new (rows, 1) column."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _sums = data
    return x.sum(dim=1, keepdim=True)

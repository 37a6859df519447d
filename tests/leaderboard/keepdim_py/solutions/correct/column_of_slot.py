"""Right: sums into the (rows,) slot and returns it viewed as the (rows, 1) column."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, sums = data
    sums.copy_(x.sum(dim=1))
    return sums.view(-1, 1)

"""Wrong by the problem's check: the right sums, returned in the (rows,) slot's shape where
the reference returns a (rows, 1) column."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, sums = data
    sums.copy_(x.sum(dim=1))
    return sums

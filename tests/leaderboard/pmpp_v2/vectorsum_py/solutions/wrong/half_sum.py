"""Wrong (written for gpubench's tests): twice the sum of the first half, returned 0-dim,
the form the reference returns; the values are what fails."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data, _output = data
    return data[: data.numel() // 2].sum() * 2

# Wrong: sums the first half of the vector only (a grid that covers half the input).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return data[: data.numel() // 2].sum()

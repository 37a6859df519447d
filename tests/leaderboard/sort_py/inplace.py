"""Wrong, for reference-kernels' own pmpp/sort_py: sorts its input in place (the input must stay
as it was) and returns it. The answer is right; the write to the input is what must FAIL."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data.copy_(data.sort()[0])
    return data

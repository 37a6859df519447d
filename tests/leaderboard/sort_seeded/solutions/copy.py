"""Wrong: copies its input. It "sorts" only an input that is one value repeated."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    values, output = data
    output.copy_(values)
    return output

"""Wrong: sorts its input in place (the input must stay as it was) and returns it copied."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    values, output = data
    values.copy_(values.sort()[0])
    output.copy_(values)
    return output

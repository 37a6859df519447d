from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # returns a new tensor instead of writing into data's output: accepted (copied)
    x, y, _ = data
    return x * 2.5 + y

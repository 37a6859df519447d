from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, y, out = data
    out[...] = 2.0 * x + y  # the wrong factor
    return out

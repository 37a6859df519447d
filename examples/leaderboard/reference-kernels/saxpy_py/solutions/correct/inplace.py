from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, y, out = data
    out.copy_(y)
    out.add_(x, alpha=2.5)
    return out

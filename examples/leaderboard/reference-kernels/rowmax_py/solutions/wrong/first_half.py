from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # looks at the first half of each row only
    (x,) = data
    return x[:, : x.shape[1] // 2].amax(dim=1)

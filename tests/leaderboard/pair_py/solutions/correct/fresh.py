"""Right: leaves the slots alone and returns new tensors (a list, not a tuple)."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, _scaled, _scales = data
    scales = x.abs().amax(dim=1)
    return [x / scales[:, None], scales]

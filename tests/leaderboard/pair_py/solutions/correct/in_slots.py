"""Right: fills both output slots and returns them, as ref_kernel does."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, scaled, scales = data
    scales.copy_(x.abs().max(dim=1).values)
    scaled.copy_(x / scales[:, None])
    return scaled, scales

"""Wrong: scales by the largest value, not the largest magnitude; both tensors are off."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, scaled, scales = data
    scales.copy_(x.amax(dim=1))
    scaled.copy_(x / scales[:, None])
    return scaled, scales

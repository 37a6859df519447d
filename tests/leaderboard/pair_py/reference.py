"""A problem in reference-kernels' format whose ref_kernel returns a tuple, as the helion
and linalg problems' do (fp8_quant_py: the quantized values and their scales): each row
scaled by its largest magnitude, and those magnitudes. data = (x, scaled, scales): two
output slots, which ref_kernel fills and returns. Written for gpubench's tests."""

import torch
from task import input_t, output_t
from utils import close_enough, device


def ref_kernel(data: input_t) -> output_t:
    x, scaled, scales = data
    scales[...] = x.abs().amax(dim=1)
    scaled[...] = x / scales[:, None]
    return scaled, scales


def generate_input(rows: int, cols: int, seed: int) -> input_t:
    gen = torch.Generator(device=device())
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, device=device(), dtype=torch.float32, generator=gen)
    return x, torch.empty_like(x), torch.empty(rows, device=device(), dtype=torch.float32)


def check_implementation(data: input_t, output: output_t) -> tuple[bool, str]:
    expected = ref_kernel(data)
    if not isinstance(output, tuple | list) or len(output) != 2:
        return False, f"expected (scaled, scales), got {type(output).__name__}"
    for name, got, want in zip(("scaled", "scales"), output, expected, strict=True):
        good, why = close_enough(got, want, rtol=1e-5, atol=1e-6)
        if not good:
            return False, f"{name}: {why}"
    return True, ""

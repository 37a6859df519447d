"""reference-kernels' pmpp_v2/vectorsum_py, for gpubench's tests: ref_kernel returns a 0-dim
sum while generate_input's output slot is (1,).

Copied from GPU MODE reference-kernels, https://github.com/gpu-mode/reference-kernels
(problems/pmpp_v2/vectorsum_py/reference.py at commit f83cb92), under its license:
https://github.com/gpu-mode/reference-kernels/blob/main/LICENSE
Changed: generate_input draws on the CPU where there is no GPU (DEVICE; the original
draws on "cuda"); this docstring added, the other docstrings shortened, the imports
sorted.
"""

import torch
from task import input_t, output_t
from utils import DeterministicContext, make_match_reference

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def ref_kernel(data: input_t) -> output_t:
    """
    Reference implementation of vector sum reduction using PyTorch.
    """
    with DeterministicContext():
        data, output = data
        # Let's be on the safe side here, and do the reduction in 64 bit
        output = data.to(torch.float64).sum().to(torch.float32)
        return output


def generate_input(size: int, seed: int) -> input_t:
    """
    Generates random input tensor of specified shape with random offset and scale.
    """
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)

    # Generate base random data
    data = torch.randn(
        size, device=DEVICE, dtype=torch.float32, generator=gen
    ).contiguous()

    # Generate random offset and scale (using different seeds to avoid correlation)
    offset_gen = torch.Generator(device=DEVICE)
    offset_gen.manual_seed(seed + 1)
    scale_gen = torch.Generator(device=DEVICE)
    scale_gen.manual_seed(seed + 2)

    # Generate random offset between -100 and 100
    offset = (torch.rand(1, device=DEVICE, generator=offset_gen) * 200 - 100).item()
    # Generate random scale between 0.1 and 10
    scale = (torch.rand(1, device=DEVICE, generator=scale_gen) * 9.9 + 0.1).item()

    # Apply scale and offset
    input_tensor = (data * scale + offset).contiguous()
    output_tensor = torch.empty(1, device=DEVICE, dtype=torch.float32)
    return input_tensor, output_tensor


check_implementation = make_match_reference(ref_kernel)

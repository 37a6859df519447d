# Copied from GPU MODE reference-kernels, https://github.com/gpu-mode/reference-kernels
# (problems/pmpp_v2/vectorsum_py/task.py at commit f83cb92), under its license:
# https://github.com/gpu-mode/reference-kernels/blob/main/LICENSE. Changed: this comment,
# the imports sorted, a trailing space dropped.
from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)

class TestSpec(TypedDict):
    size: int
    seed: int

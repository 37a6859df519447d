# An example problem in KernelBench's format (level 1 style), written for gpubench:
#   gpubench run --problem examples/leaderboard/kernelbench/1_Scaled_GELU.py \
#       --submission examples/leaderboard/kernelbench/solutions/1_Scaled_GELU_erf.py
import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU (erf form) of the input, times a constant."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x) * self.scale


batch_size = 256
dim = 4096
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]

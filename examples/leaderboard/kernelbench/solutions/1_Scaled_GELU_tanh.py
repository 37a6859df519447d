# A wrong ModelNew for 1_Scaled_GELU: the tanh approximation of GELU, off by up to ~1e-3,
# far beyond KernelBench's float32 tolerance (1e-4).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh") * self.scale

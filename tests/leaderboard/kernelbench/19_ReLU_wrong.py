# KernelBench level1/19_ReLU: wrong, scaled by 0.999 (1e-3 relative, 10x KernelBench's
# float32 tolerance).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 0.999

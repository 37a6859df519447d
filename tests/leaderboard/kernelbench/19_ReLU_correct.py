# KernelBench level1/19_ReLU: a correct ModelNew.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp_min(0.0)

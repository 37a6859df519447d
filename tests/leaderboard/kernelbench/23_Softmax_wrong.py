# KernelBench level1/23_Softmax: wrong, normalised over the batch instead of the features.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=0)

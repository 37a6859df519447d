# Hostile (2_Linear_ReLU_Sum): a ModelNew that returns its first output for every input.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.first = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.first is None:
            self.first = torch.relu(self.linear(x)).sum(dim=1, keepdim=True)
        return self.first.clone()

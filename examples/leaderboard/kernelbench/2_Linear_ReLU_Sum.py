# An example problem in KernelBench's format (level 2 style: a GEMM and what follows it),
# written for gpubench.
import torch
import torch.nn as nn


class Model(nn.Module):
    """x @ W^T + b, ReLU, then the sum over the features (keepdim)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)).sum(dim=1, keepdim=True)


batch_size = 128
in_features = 512
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]

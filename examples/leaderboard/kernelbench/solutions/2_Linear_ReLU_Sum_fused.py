# A correct ModelNew for 2_Linear_ReLU_Sum: addmm (bias fused into the GEMM), in-place ReLU.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # the same weights as Model's

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return y.relu_().sum(dim=1, keepdim=True)

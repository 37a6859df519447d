# KernelBench level2/12_Gemm_Multiply_LeakyReLU: wrong, ReLU instead of LeakyReLU.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier

    def forward(self, x):
        return torch.relu(self.gemm(x) * self.multiplier)

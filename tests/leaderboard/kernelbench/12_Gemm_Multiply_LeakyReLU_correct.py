# KernelBench level2/12_Gemm_Multiply_LeakyReLU: a correct ModelNew (the same parameters,
# created in Model's order, so the seeded init gives the same weights).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.addmm(self.gemm.bias, x, self.gemm.weight.t()).mul_(self.multiplier)
        return F.leaky_relu(y, self.negative_slope, inplace=True)

# KernelBench level1/23_Softmax: wrong, each row normalised by the sum over its first half
# only (a reduction that covered half the row), so every value is about twice too large.
# (A softmax over the wrong dimension is not wrong enough: on 4096 x 4096 normal inputs
# it lands within KernelBench's atol of 1e-4, H200, 2026-11-27.)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e[:, : x.shape[1] // 2].sum(dim=1, keepdim=True)

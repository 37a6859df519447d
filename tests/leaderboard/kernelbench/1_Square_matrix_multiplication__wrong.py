# KernelBench level1/1_Square_matrix_multiplication_: a partial-sum cheat, the last 1/64 of
# the K dimension skipped (~1.6% of the work, and of the value: far beyond 1e-4).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        k = A.shape[1] - A.shape[1] // 64
        return torch.mm(A[:, :k], B[:k])

"""A CPU-only torch script for `gpubench profile` tests: a few matmuls and a softmax."""
import sys

import torch

x = torch.randn(256, 256)
for _ in range(3):
    y = torch.softmax(x @ x, dim=-1)
print("done", float(y.sum()), sys.argv[1:])

"""A script that works a little, then raises: `gpubench profile` must keep what it recorded."""
import torch

x = torch.randn(128, 128)
y = torch.relu(x @ x)
raise RuntimeError("the program failed on purpose")

"""A KernelBench submission whose import never ends (a `while True` at top level): it must
be stopped by the import's own time limit with that reason, not by --build-timeout."""

import torch

while True:
    pass


class ModelNew(torch.nn.Module):  # never reached
    pass

"""Helpers the example problems share (task.yml copies ../utils.py beside each problem, as
reference-kernels' own problems do). Written for gpubench's examples."""

import torch


def device() -> str:
    """The leaderboard's problems always draw on CUDA; these run on a CPU too."""
    return "cuda" if torch.cuda.is_available() else "cpu"


@torch.no_grad()
def close_enough(received, expected, rtol: float, atol: float) -> tuple[bool, str]:
    """(True, '') when every element is within atol + rtol * |expected|, NaN nowhere."""
    if not isinstance(received, torch.Tensor) or received.shape != expected.shape:
        shape = getattr(received, "shape", type(received).__name__)
        return False, f"shape {shape}, expected {tuple(expected.shape)}"
    got, want = received.double(), expected.double()
    bad = ~((got - want).abs() <= atol + rtol * want.abs())
    count = int(bad.sum())
    if count:
        return False, f"{count} of {want.numel()} elements off, max err " \
                      f"{float((got - want).abs().nan_to_num(float('inf')).max()):.3g}"
    return True, ""

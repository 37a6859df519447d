"""Wrong by the problem's own check (written for gpubench's tests, as the problem's
solutions/correct/pytorch.py does): writes the right sum into its (1,) output slot and
returns the slot. ref_kernel's sum is 0-dim and verbose_allclose compares shapes first:
SIZE MISMATCH, on the leaderboard (its eval.py hands the check what custom_kernel
returned) and in gpubench alike."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data, output = data
    output[...] = data.sum()
    return output

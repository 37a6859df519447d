"""Where `run --ncu-check`'s ncu run lived: it is now tools/ncu/check.py (its pass,
tools/ncu/run_pass.py, is registered by commands/run.py). Kept for imports of the old
name."""

from gpubench.tools.ncu.check import check_group, check_label, passing_points

__all__ = ["check_group", "check_label", "passing_points"]

"""What must match between runs for a verdict to be about the code alone."""

from __future__ import annotations

from collections.abc import Sequence

# Environment facts that must match for a verdict to be about the code alone.
ENV_KEYS = ("device", "gpu", "driver", "cuda_runtime", "torch", "triton", "sm_clock_max_mhz",
            "power_limit_w", "cpu")


def environment_differences(base_env: dict, new_env: dict) -> tuple[str, ...]:
    """'gpu: A -> B' for every fact that decides speed and differs between the runs."""
    return tuple(f"{key}: {base_env.get(key)} -> {new_env.get(key)}" for key in ENV_KEYS
                 if key in base_env or key in new_env
                 if base_env.get(key) != new_env.get(key))


def repeat_differences(base_runs: Sequence, new_runs: Sequence) -> tuple[str, ...]:
    """'BASE repeat 2: gpu: A -> B' for each further run of a side (RunDocuments, the
    first one that side's own) that differs from its first: runs pooled as one side's
    repeats must come from one machine and one software stack too."""
    return tuple(f"{role} repeat {number}: {what}"
                 for role, runs in (("BASE", base_runs), ("NEW", new_runs))
                 for number, run in enumerate(runs[1:], start=2)
                 for what in environment_differences(runs[0].env, run.env))

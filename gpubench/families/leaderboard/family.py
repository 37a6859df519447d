"""What a leaderboard problem adds to a family: the leaderboard's own score rule.

A problem loaded from a leaderboard's format (reference-kernels, KernelBench) is an
ordinary Family, so every command works on it; beside it the format names how its
leaderboard ranks a submission (score.py computes it from recorded times)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench.families.spec import Family
from gpubench.records.shape import Shape


@dataclass(frozen=True)
class Scoring:
    """How a format's leaderboard turns times into its number.

    rule       "geomean": the geometric mean of a submission's times over `shapes`
               (reference-kernels ranks by it, lower is better); "speedup": the reference's
               time over the submission's at each shape (KernelBench's per-problem figure)
    shapes     the shapes the score is taken over, repeated where the format lists a shape
               twice (with another seed): the score weighs it twice, as the leaderboard does
    label      what the line says the number is, naming the format
    """

    rule: str
    shapes: tuple[Shape, ...]
    label: str


@dataclass(frozen=True)
class LeaderboardFamily(Family):
    """A Family loaded from a leaderboard problem, with its format and score rule."""

    scoring: Scoring | None = field(default=None, hash=False, compare=False)
    problem_format: str = ""
    # Where the problem's and the submissions' files are (the family's folder holds only
    # problem.json): an error is reported at its line in them.
    source_roots: tuple = ()
    # The formats say nothing of FLOPs or bytes: TFLOP/s, GB/s and the roofline are unknown.
    cost_unknown: bool = True

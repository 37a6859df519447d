"""The leaderboard's own number for each submission, from the times gpubench recorded.

reference-kernels ranks a submission by the geometric mean of its times over the
problem's benchmark shapes (its harness takes the mean of each shape's timed calls; here
gpubench's median of each, which noise moves less). KernelBench judges a ModelNew by its
speedup over Model, eager PyTorch, at the problem's shape. A submission gets a number only
where it PASSed at every shape the rule needs; else the line says which it lacks. Pure:
Results in, lines out."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpubench.families.leaderboard.family import Scoring
from gpubench.format import duration


@dataclass(frozen=True)
class Score:
    variant: str
    mode: str
    value: float | None  # seconds (geomean) or a ratio (speedup); None: not scored
    reason: str = ""  # why not scored

    def text(self, rule: str) -> str:
        if self.value is None:
            return f"{self.variant}: no score ({self.reason})"
        shown = duration(self.value) if rule == "geomean" else f"{self.value:.3g}x"
        return f"{self.variant}: {shown}"


def scores(scoring: Scoring, family: str, results) -> list[Score]:
    """One Score per variant and timing mode of `family` among `results`."""
    mine = [r for r in results if r.family == family]
    if not scoring.shapes:  # the rule holds at any shape: those the run has
        scoring = replace(scoring, shapes=tuple(dict.fromkeys(r.shape for r in mine)))
    times = {(r.variant, r.mode, r.shape): r.median_s for r in mine
             if r.passed and r.median_s}
    baseline = next((r.variant for r in mine if r.baseline), None)
    found = []
    for variant, mode in dict.fromkeys((r.variant, r.mode) for r in mine):
        if scoring.rule == "speedup" and variant == baseline:
            continue
        found.append(_score(scoring, variant, mode, times, baseline))
    return found


def _score(scoring: Scoring, variant: str, mode: str, times: dict, baseline) -> Score:
    lacking = [s for s in scoring.shapes if (variant, mode, s) not in times]
    if lacking:
        return Score(variant, mode, None, f"no PASS at {lacking[0].text()}")
    own = [times[(variant, mode, s)] for s in scoring.shapes]
    if scoring.rule == "geomean":
        return Score(variant, mode, geometric_mean(own))
    base = [times.get((baseline, mode, s)) for s in scoring.shapes]
    if None in base:
        return Score(variant, mode, None, "the reference has no PASS to compare with")
    return Score(variant, mode, geometric_mean([b / t for b, t in zip(base, own, strict=True)]))


def geometric_mean(values: list[float]) -> float:
    """exp(mean(log v)): the number reference-kernels ranks by (for times, lower wins)."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score_lines(scoring: Scoring, family: str, results) -> list[str]:
    """The lines shown under a run's tables; none when no scored shape ran."""
    found = scores(scoring, family, results)
    ran = {r.shape for r in results if r.family == family}
    if not found:
        return []
    if scoring.shapes and not any(s in ran for s in scoring.shapes):
        return [f"{family}: {scoring.label}: not computed, the run has none of its shapes "
                f"({scoring.shapes[0].text()}, ...; a GPU run's default shapes)"]
    modes = sorted({s.mode for s in found})
    lines = [f"{family}: {scoring.label}"]
    for score in found:
        suffix = f" [{score.mode}]" if len(modes) > 1 else ""
        lines.append(f"  {score.text(scoring.rule)}{suffix}")
    return lines

"""`gpubench ab --aa`: what an A/B of this family can resolve on this machine, from an A/A
(the family against an identical copy of itself).

Per point, the smallest true change the same A/B would call FASTER or SLOWER at 80% power:
its verdict needs the interval, z standard errors wide on each side, to clear the bar
(threshold and drift), so a true change of bar + (z + z_power) standard errors clears it in
80% of A/Bs. The standard error comes from the A/A's own interval (half its width in log
space, over its z), which carries the blocks the time allowed and the pairs' noise. An A/A
point read FASTER or SLOWER is a false verdict: something differs between two identical
sides (docs/measurement.md).

Pure: verdicts in, calibrations out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

from gpubench.codec import Record
from gpubench.records.ab import PairVerdict

POWER = 0.8  # the share of A/Bs that should decide a change of the detectable size
Z_POWER = NormalDist().inv_cdf(POWER)
FALSE = ("FASTER", "SLOWER")
# The smallest threshold a calibration gives: one part in a thousand, a few times the
# narrowest paired intervals measured on an H200 (+-0.02-0.04% from 50 us), so a point's
# threshold never rests on one lucky A/A.
NOISE_FLOOR = 0.001
# A threshold from an A/A bounds what two identical sides read apart there (a bias the A/B's
# own interval cannot see): |the A/A's change| plus this many of its standard errors, a
# one-sided 95% upper bound. Not the A/A interval's far end (2.6-4 standard errors out):
# the A/B's own interval already holds the sampling noise, and a threshold as wide again
# asks a change to clear two intervals, which halves the power at 0.5% (an H100's planted
# 0.5%: SLOWER at 3 of 6 points of 50 us and more with the far end, 6 of 6 with the bound).
Z_BIAS = NormalDist().inv_cdf(0.95)


def point_label(variant: str, shape: str, dtype: str, mode: str) -> str:
    """'work n=65536 float32 cold': how a calibration names its point (its file's key)."""
    return f"{variant} {shape} {dtype} {mode}"


@dataclass(frozen=True)
class Calibration(Record):
    """One point of an A/A: how small a change an A/B of it decides, and its own verdict."""

    variant: str
    dtype: str
    shape: str
    mode: str
    detectable: float  # the change decided at 80% power, as a fraction; nan: no interval
    verdict: str
    blocks: int = 0
    low: float = math.nan  # the A/A's own interval of NEW/BASE (identical sides)
    high: float = math.nan
    ratio: float = math.nan  # the A/A's NEW/BASE; nan in calibrations made before it
    z: float = math.nan  # the z its interval was made at; nan likewise

    @property
    def noise_threshold(self) -> float:
        """`ab --threshold-from-aa`: how far apart two identical sides can read here, a
        one-sided 95% upper bound (Z_BIAS); at least NOISE_FLOOR. A calibration without its
        ratio and z (an older file) gives its interval's far end, the wider bound. nan
        without an interval."""
        if math.isnan(self.low) or math.isnan(self.high):
            return math.nan
        if not (self.ratio > 0 and self.z > 0 and self.low > 0):
            return max(abs(self.low - 1), abs(self.high - 1), NOISE_FLOOR)
        error = (math.log(self.high) - math.log(self.low)) / (2 * self.z)
        return max(math.expm1(abs(math.log(self.ratio)) + Z_BIAS * error), NOISE_FLOOR)

    @property
    def label(self) -> str:
        return point_label(self.variant, self.shape, self.dtype, self.mode)

    @property
    def false(self) -> bool:
        return self.verdict in FALSE


def detectable_change(v: PairVerdict) -> float:
    """bar + (z + z_power) standard errors, as a fraction (nan without an interval)."""
    if not (v.low > 0 and v.high > 0) or math.isnan(v.low) or math.isnan(v.high):
        return math.nan
    error = (math.log(v.high) - math.log(v.low)) / (2 * v.z)
    return math.exp(math.log1p(v.bar) + (v.z + Z_POWER) * error) - 1


def calibrate(verdicts: Iterable[PairVerdict]) -> list[Calibration]:
    return [Calibration(v.variant, v.dtype, v.shape, v.mode, detectable_change(v), v.verdict,
                        v.blocks, v.low, v.high, v.ratio, v.z) for v in verdicts]


def noise_thresholds(known: dict[str, Calibration]) -> dict[str, float]:
    """Each calibrated point's threshold from its A/A (Calibration.noise_threshold), by
    label; a point whose A/A had no interval is left out (it keeps --threshold)."""
    return {label: c.noise_threshold for label, c in known.items()
            if not math.isnan(c.noise_threshold)}


def own_thresholds(verdicts: Iterable[PairVerdict], thresholds: dict[str, float]
                   ) -> dict[str, float]:
    """The thresholds of these points, by label: what an A/B run records of
    --threshold-from-aa, so its footer (and `compare` of it later) says what each cleared."""
    labels = (point_label(v.variant, v.shape, v.dtype, v.mode) for v in verdicts)
    return {label: thresholds[label] for label in labels if label in thresholds}


def aa_summary(found: list[Calibration]) -> str:
    """'A/A: 12 points, 0 false verdicts; detectable change 0.61% to 2.3% (median 0.9%)'."""
    sizes = sorted(c.detectable for c in found if not math.isnan(c.detectable))
    false = sum(c.false for c in found)
    spread = "" if not sizes else (
        f"; detectable change {sizes[0]:.2%} to {sizes[-1]:.2%} "
        f"(median {sizes[len(sizes) // 2]:.2%}) at {POWER:.0%} power")
    return f"A/A: {len(found)} points, {false} false verdict{'s' * (false != 1)}{spread}"


def with_resolution(verdicts: list[PairVerdict], known: dict[str, Calibration]
                    ) -> list[PairVerdict]:
    """An UNSURE point that an earlier A/A on this device model calibrated says whether
    its change is below what the point resolves, rather than a bare UNSURE."""
    from dataclasses import replace

    marked = []
    for v in verdicts:
        found = known.get(point_label(v.variant, v.shape, v.dtype, v.mode))
        if v.verdict == "UNSURE" and found is not None and not math.isnan(found.detectable):
            note = (f"below what this point resolves here (A/A: {found.detectable:.2%} at "
                    f"{POWER:.0%} power)" if abs(v.change) < found.detectable else
                    f"this point resolves {found.detectable:.2%} here (A/A)")
            v = replace(v, reason=f"{v.reason}; {note}" if v.reason else note)
        marked.append(v)
    return marked

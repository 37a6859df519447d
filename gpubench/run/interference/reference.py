"""Do devices measured side by side slow each other down? The verdict, from samples.

Pure. GPUs of one node share power delivery, cooling, PCIe switches and the
host's CPUs; CPU workers share cores and memory bandwidth. So `run --devices`
does not assume independence: it times a short reference (a compute-heavy and a
launch-bound matmul: power and host contention) on each device alone, one after
another, then on all of them at once, and compares the two sample sets the way
`gpubench compare` compares two runs (bootstrap CI of the ratio of medians,
bar = the larger of the 1% threshold and the samples' own spread). A SLOWER
verdict on any device becomes a warning with the remedy.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.analysis.comparison import FASTER, SLOWER, Comparison, compare_samples
from gpubench.codec import Record


@dataclass(frozen=True)
class ReferenceShift(Record):
    """One reference point on one device: alone against together."""

    DERIVED = ("change",)

    device_id: str  # "cuda:1"
    reference: str  # "matmul 8192x8192x8192 bfloat16"
    comparison: Comparison

    @property
    def change(self) -> float:
        return self.comparison.ratio - 1



@dataclass(frozen=True)
class Interference(Record):
    DERIVED = ("summary", "warning")  # for the report and whoever reads results.json

    devices: int
    shifts: tuple[ReferenceShift, ...]
    problem: str = ""  # why nothing could be measured (a reference failed), or ""
    source: str = ""  # where samples of an earlier run were reused (interference_cache.py)
    beside_builds: int = 0  # builds that compiled on the host while it was measured

    @property
    def slowed(self) -> list[ReferenceShift]:
        return [s for s in self.shifts if s.comparison.verdict == SLOWER]

    @property
    def worst(self) -> ReferenceShift | None:
        return max(self.shifts, key=lambda s: s.change, default=None)

    def summary(self) -> str:
        """One line for the terminal and the report."""
        if self.problem:
            return f"interference: not measured ({self.problem})"
        worst = self.worst
        if worst is None:
            return "interference: not measured"
        low, high = worst.comparison.ci_low - 1, worst.comparison.ci_high - 1
        said = ", ".join(part for part in (self.source, beside(self.beside_builds)) if part)
        return (f"interference, {self.devices} devices at once against each alone: largest "
                f"shift {worst.change:+.1%} [{low:+.1%}, {high:+.1%}] ({worst.device_id}, "
                f"{worst.reference}): {worst.comparison.verdict}"
                + (f" ({said})" if said else ""))

    def warning(self) -> str | None:
        """The warning when a device measured slower beside the others, with the remedy."""
        slowed = self.slowed
        if not slowed:
            return None
        named = ", ".join(f"{s.device_id} {s.reference} {s.change:+.1%}" for s in slowed)
        if self.beside_builds:  # compilers on the host's cores: not only the devices
            return (f"the {self.devices} devices measured slower at once ({named}) while "
                    f"{self.beside_builds} builds compiled on this host, which may account "
                    f"for it; to measure it without them: GPUBENCH_INTERFERENCE_MAX_AGE_S=0 "
                    f"on a run whose builds are cached")
        return (f"the {self.devices} devices slowed each other when measured at once "
                f"({named}); times in this run may carry that much: run with fewer devices "
                f"(--devices with fewer GPUs, --workers with fewer CPU workers) or one")



def assess(alone: dict[tuple[str, str], list[float]],
           together: dict[tuple[str, str], list[float]], devices: int,
           source: str = "", beside_builds: int = 0) -> Interference:
    """{(device_id, reference): samples in seconds} measured alone and together; `source`:
    where they were reused from, when they were (interference_cache.py); `beside_builds`:
    how many builds compiled on the host meanwhile."""
    shifts = []
    for key in alone:
        if key in together and alone[key] and together[key]:
            comparison = compare_samples(alone[key], together[key])
            shifts.append(ReferenceShift(key[0], key[1], comparison))
    if not shifts:
        return Interference(devices, (), "no reference point was timed both alone and "
                                         "together", source, beside_builds)
    return Interference(devices, tuple(shifts), source=source, beside_builds=beside_builds)


def beside(builds: int) -> str:
    """'beside 4 builds compiling' (what a reference measured in a cold run shares the
    host's cores with), or '' for none."""
    if not builds:
        return ""
    return f"beside {builds} build{'s' if builds != 1 else ''} compiling"


__all__ = ["FASTER", "SLOWER", "Interference", "ReferenceShift", "assess"]

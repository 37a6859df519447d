"""PairVerdict: one point of an A/B run (`gpubench ab`), as its run record keeps it.

An A/B run's results.json holds both versions' rows (NEW's under the variant's name,
BASE's as 'NAME@base') and, in meta["ab"], one PairVerdict per point and mode: the
paired ratio NEW/BASE, its interval and the verdict (analysis/ab.py decides them).
`RunDocument.pairs` reads them back. Pure data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpubench.codec import Record
from gpubench.timing.paired import Z_SEQUENTIAL

# How BASE's rows are named in an A/B run's record: NAME@base beside NEW's NAME.
BASE_SUFFIX = "@base"


def base_name(variant: str) -> str:
    return f"{variant}{BASE_SUFFIX}"


@dataclass(frozen=True)
class PairVerdict(Record):
    UNKNOWN = "refuse"

    variant: str
    dtype: str
    shape: str  # Shape.text()
    mode: str
    control: bool  # the variant's sources are the same in both versions
    verdict: str  # FASTER, SLOWER, SAME, UNSURE; FAILED or SUSPECT when a side is not PASS;
    # NOT RUN when ab was stopped before the point
    ratio: float = math.nan  # NEW / BASE, the median of the blocks' ratios
    low: float = math.nan  # its interval, at z
    high: float = math.nan
    blocks: int = 0  # blocks of four calls (two of each version) behind the ratio
    base_median_s: float = math.nan
    new_median_s: float = math.nan
    bar: float = 0.0  # the change a FASTER/SLOWER needed (the threshold, and drift)
    reason: str = ""
    stop: str = ""  # why the pairs stopped: decided, max_time
    # The interval's z: Z_SEQUENTIAL for one point, wider when many are decided together
    # (timing/paired.family_z); records written before it hold Z_SEQUENTIAL's intervals.
    z: float = Z_SEQUENTIAL

    @property
    def change(self) -> float:
        """NEW vs BASE as a signed fraction: +0.02 is 2% slower."""
        return self.ratio - 1.0

    @property
    def moved(self) -> bool:
        """Whether the interval leaves out 1: the two versions' times differ, however little
        (for a control: the run's drift)."""
        return self.low > 1.0 or self.high < 1.0



def pairs_of_run(meta: dict) -> tuple[PairVerdict, ...]:
    """The A/B verdicts a run's meta holds (none for a run that is not an A/B run)."""
    return tuple(PairVerdict.from_dict(v) for v in (meta.get("ab") or {}).get("verdicts", ()))

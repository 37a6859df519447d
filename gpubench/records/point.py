"""A point's identity (PointKey) and the one message that asks a worker to measure it (Task).

PointKey is what results are keyed, joined and compared by: family, variant,
dtype, shape and timing mode. Task is a planned point as the worker needs it,
built in one place (plan.Point.task) for run, ncu, nsys and trace alike, and
carrying the whole TimingSettings, so nothing is re-shaped on the way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gpubench.codec import Record
from gpubench.records.shape import Shape
from gpubench.timing.settings import TimingSettings


@dataclass(frozen=True)
class PointKey:
    family: str
    variant: str
    dtype: str
    shape: Shape
    mode: str

    def text(self) -> str:
        """'matmul/naive/float32/M=16,N=4096,K=4096/cold': unique within a run."""
        return f"{self.family}/{self.variant}/{self.dtype}/{self.shape.text()}/{self.mode}"

    def label(self) -> str:
        """'square cuda float32 n=2^20 cold': the key, readable (tables and charts)."""
        return f"{self.family} {self.variant} {self.dtype} {self.shape.label()} {self.mode}"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True)
class Task(Record):
    """One (family, variant, dtype, shape) point to build, check and time in every mode
    of `timing.modes`."""

    id: int
    family: str
    family_dir: str
    variant: str
    dtype: str
    shape: Shape
    seed: int
    timing: TimingSettings = field(default_factory=TimingSettings)
    # Check it (building what it needs) and stop: `gpubench tune` checks every config on
    # its own, in parallel workers, before the race times the ones that passed.
    check_only: bool = False
    # `gpubench ab`: the family folder of BASE, whose variant of the same name is timed
    # against this one (family_dir, NEW) in pairs (run/ab/); empty for every other task.
    base_dir: str = ""

    @property
    def label(self) -> str:
        """How logs, NVTX ranges and trace regions name the point."""
        return f"{self.family}/{self.variant}/{self.shape.text()}/{self.dtype}"

    @property
    def stem(self) -> str:
        """For file names of profiler outputs: <family>-<variant>-<shape>."""
        return f"{self.family}-{self.variant}-{self.shape.slug()}"

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Task:
        return cls.from_dict(json.loads(text))

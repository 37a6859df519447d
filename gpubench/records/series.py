"""A run as points of series across runs (`gpubench history`). Pure.

Each row of a run becomes one HistoryRow: which point (family, variant, dtype, shape,
mode), what was measured (median and its 95% CI, or a status without a time), and what
it was measured on and with: the GPU, the timing method, the commit of the family's
folder. Rows of one point join one series only when they were measured alike: the same
GPU model and the same method (how the time was taken: L2 flushed or not, events or
CUPTI, ...). A run on another GPU, or timed another way, starts a series of its own
rather than a step in this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from gpubench.codec import Record
from gpubench.records.result import OK
from gpubench.records.run import TIME_FORMAT, RunDocument


@dataclass(frozen=True)
class HistoryRow(Record):
    """One point of one run, with what puts it in a series and in the commit history."""

    run_dir: str
    run_id: str
    started: float  # Unix seconds: the order of a series
    family: str
    variant: str
    dtype: str
    shape: str  # 'n=1048576', 'M=1024,N=1024,K=1024'
    mode: str
    status: str
    median_s: float = math.nan  # NaN: no time (failed, skipped, correctness only)
    ci_low_s: float = math.nan
    ci_high_s: float = math.nan
    gpu: str = ""  # the GPU model ('NVIDIA H200'), else the host's CPU ('x86_64')
    method: str = ""  # how the time was taken (the measurement's method)
    commit: str = ""  # HEAD of the family folder's repository ('' outside git)
    changed: str = ""  # the last commit that changed the family's folder
    dirty: bool = False  # the folder held uncommitted edits
    subject: str = ""  # HEAD's first line
    gpubench_commit: str = ""

    @property
    def point(self) -> str:
        """'matmul/torch/float16/M=1024,N=1024,K=1024/cold'."""
        return f"{self.family}/{self.variant}/{self.dtype}/{self.shape}/{self.mode}"

    @property
    def series(self) -> str:
        """The series the row belongs to: its point, measured on one GPU model one way."""
        return f"{self.point} @ {self.gpu} | {self.method}"

    @property
    def timed(self) -> bool:
        """A point of its series (passed, with a time); anything else is a mark on it. The
        time is a finite positive number: a store edited by hand or by another tool may
        hold inf (which no change-point search can place) or text where a time belongs."""
        median = self.median_s
        return (self.status == OK and isinstance(median, int | float)
                and not isinstance(median, bool) and math.isfinite(median) and median > 0)

    @property
    def commit_label(self) -> str:
        """'1a2b3c4', '1a2b3c4+dirty', or '-' outside git."""
        if not self.commit:
            return "-"
        return self.commit[:7] + ("+dirty" if self.dirty else "")


# Runs whose rows are no points of a series: an A/B run's (two versions in one process,
# BASE's rows renamed), a tune race's (configs, not variants), a profile's.
NOT_SERIES = ("ab", "tune", "kind")


def history_rows(document: RunDocument, run_dir: str) -> list[HistoryRow]:
    """Every row of a `run` (a NOT_RUN row too: it marks the run as having missed it);
    none of another command's record (NOT_SERIES)."""
    meta, env = document.meta, document.env
    if any(key in meta for key in NOT_SERIES):
        return []
    started = started_at(meta)
    gpu = env.get("gpu") or env.get("cpu") or ""  # as a row's device_name says it
    families = (meta.get("revisions") or {}).get("families") or {}
    gpubench_commit = ((meta.get("revisions") or {}).get("gpubench") or {}).get("commit") \
        or _plain_commit(meta.get("gpubench_commit"))
    rows = []
    for result in document.results:
        revision = families.get(result.family) or {}
        summary = result.summary
        rows.append(HistoryRow(
            run_dir=run_dir, run_id=str(meta.get("run_id") or run_dir), started=started,
            family=result.family, variant=result.variant, dtype=result.dtype,
            shape=result.shape.text(), mode=result.mode, status=result.status,
            median_s=summary.median if summary else math.nan,
            ci_low_s=summary.ci_low if summary else math.nan,
            ci_high_s=summary.ci_high if summary else math.nan,
            gpu=result.device_name or gpu, method=result.method or "",
            commit=revision.get("commit") or _plain_commit(meta.get("git_commit")),
            changed=revision.get("changed") or "", dirty=_dirty(revision, meta),
            subject=revision.get("subject") or "", gpubench_commit=gpubench_commit or ""))
    return rows


def started_at(meta: dict) -> float:
    """When the run began, Unix seconds (0 when its meta does not say)."""
    text = meta.get("started")
    if isinstance(text, str):
        try:
            return datetime.strptime(text, TIME_FORMAT).timestamp()
        except ValueError:
            pass
    return 0.0


def _plain_commit(text) -> str:
    """'1a2b...' of envinfo's '1a2b...-dirty' (runs before revisions were recorded)."""
    return text.removesuffix("-dirty") if isinstance(text, str) else ""


def _dirty(revision: dict, meta: dict) -> bool:
    if "dirty" in revision:
        return bool(revision["dirty"])
    return isinstance(meta.get("git_commit"), str) and meta["git_commit"].endswith("-dirty")

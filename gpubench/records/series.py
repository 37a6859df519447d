"""A run as points of series across runs (`gpubench history`). Pure.

Each row of a run becomes one HistoryRow: which point (family, variant, dtype, shape,
mode), what was measured (median and its 95% CI, or a status without a time), and what
it was measured on and with: the GPU, the timing method, the commit of the family's
folder. Rows of one point join one series only when they were measured alike: the same
GPU model and the same method (how the time was taken: L2 flushed or not, events or
CUPTI, ...), of one family folder (two repositories' `kernels/square` are two families
that share a name). A run on another GPU, timed another way or of another folder, starts
a series of its own rather than a step in this one.

The software a row was measured with (torch, Triton, the CUDA runtime, the driver, the
clock policy where recorded) rides along without splitting the series: an upgrade is a
step the history shows and labels (analysis/history.py), not a new series.
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
    folder: str = ""  # the family folder's identity (folder_identity); '' unknown (old runs)
    torch: str = ""  # the versions the run measured with ('' where not recorded)
    triton: str = ""
    cuda: str = ""  # the CUDA runtime torch was built with
    driver: str = ""
    clocks: str = ""  # the GPU clock policy, where the run recorded one

    @property
    def point(self) -> str:
        """'matmul/torch/float16/M=1024,N=1024,K=1024/cold'."""
        return f"{self.family}/{self.variant}/{self.dtype}/{self.shape}/{self.mode}"

    @property
    def series(self) -> str:
        """The series the row belongs to: its point, measured on one GPU model one way,
        of one folder (an unknown folder, '', keeps the key rows had before folders)."""
        return series_key(self, self.folder)

    @property
    def environment(self) -> tuple[tuple[str, str], ...]:
        """(name, version) of the software the row was measured with, as ENVIRONMENT
        names it."""
        return tuple((name, getattr(self, field)) for field, name in ENVIRONMENT)

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


def series_key(row: HistoryRow, folder: str) -> str:
    """The row's series key with `folder` as its folder (analysis/history.py gives a row
    of an unknown folder its point's one known folder)."""
    key = f"{row.point} @ {row.gpu} | {row.method}"
    return f"{key} | {folder}" if folder else key


# HistoryRow's environment fields and the names a change is told by: a change in any of
# them between two runs of a series is an environment change.
ENVIRONMENT = (("torch", "torch"), ("triton", "triton"), ("cuda", "CUDA"),
               ("driver", "driver"), ("clocks", "clocks"))


def environment_change(before: HistoryRow, after: HistoryRow) -> str:
    """'torch 2.12.0 -> 2.13.0, triton 3.8.0 -> 3.9.0', '' when nothing changed. A version
    one of the two did not record ('') is no change: an older run's missing field says
    nothing of what it ran with."""
    changes = [f"{name} {old} -> {new}" for (name, old), (_, new)
               in zip(before.environment, after.environment, strict=True)
               if old and new and old != new]
    return ", ".join(changes)


def folder_identity(revision: dict) -> str:
    """A family folder's identity from its recorded revision (timing/revision.py): its
    repository (origin's URL, else its top folder) and its path inside it, 'github.com/
    org/repo:kernels/square'; the resolved folder outside git; '' for a run that recorded
    neither (older runs: one unknown folder)."""
    repository, path = revision.get("repository"), revision.get("path")
    if isinstance(repository, str) and repository and isinstance(path, str):
        return f"{repository}:{path}"
    folder = revision.get("folder")
    return folder if isinstance(folder, str) else ""


def folder_label(identity: str) -> str:
    """A folder identity shown compactly: 'repo:kernels/square' of 'github.com/org/repo:
    kernels/square', the last two parts of a folder outside git, '?' when unknown."""
    if not identity:
        return "?"
    repository, colon, path = identity.rpartition(":")
    if colon and repository:
        return f"{repository.rstrip('/').rsplit('/', 1)[-1]}:{path}"
    return "/".join(identity.rstrip("/").rsplit("/", 2)[-2:])


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
    software = software_of(env)
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
            subject=revision.get("subject") or "", gpubench_commit=gpubench_commit or "",
            folder=folder_identity(revision), **software))
    return rows


def software_of(env: dict) -> dict[str, str]:
    """The environment fields of a run's rows from its results.json `env`: what
    timing/envinfo.py records (cuda_runtime, driver through NVML; no clock policy yet,
    read as `clock_policy` should a run record one)."""
    keys = {"torch": "torch", "triton": "triton", "cuda": "cuda_runtime", "driver": "driver",
            "clocks": "clock_policy"}
    return {field: _text(env.get(key)) for field, key in keys.items()}


def _text(value) -> str:
    return value if isinstance(value, str) else ""


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

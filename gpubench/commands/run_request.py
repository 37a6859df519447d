"""What `gpubench run` was asked for, and the start of its workers: apart from
commands/run.py so that the CLI can start the workers (`early_workers`) before it imports
that module and all it pulls in (~0.2 s of the parent's start on the CPU machine, on the
path to the first point: the workers' start is the longest part of it). commands/run.py
imports this module, never the other way round."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpubench.build.cache import require_writable_cache
from gpubench.run import timeline
from gpubench.run.config import RunConfig
from gpubench.run.lanes.prestart import Prestart, guessed_environment, guessed_slots


@dataclass(frozen=True)
class RunRequest:
    """Everything `gpubench run` was asked for, built once by the CLI and passed along."""

    config: RunConfig
    device: str = "auto"  # --device: auto, cuda or cpu
    out: Path | None = None  # --out; None: profiles/<run-id>
    as_json: bool = False  # --json: the run document alone on stdout
    ncu: bool = False  # --ncu: a short Nsight Compute summary per passing variant
    trace: bool = False  # --trace: a Chrome trace of the passing variants
    force: bool = False  # reuse an --out that holds results
    baseline: str | None = None  # --baseline: a run to compare every group with
    ncu_check: bool = False  # --ncu-check: ncu's duration beside every passing point
    markdown: bool = False  # --markdown: every group's table as markdown at the end
    report: bool = False  # --report: the run's HTML page, beside its results
    sanitize: bool = False  # --sanitize: memcheck once per variant before timing
    devices: str | None = None  # --devices all|0,2,3: one worker per GPU
    workers: int | None = None  # --workers N: N CPU workers (or local Dask CPU workers)
    cluster: str | None = None  # --cluster ADDRESS|local: Dask workers, one GPU each
    verbose: bool = False  # --verbose: each failed point's whole traceback or compiler log
    legend: bool = True  # --no-legend: the tables without the legend printed after them
    watch: bool = False  # --watch: run again on every save (commands/watch.py)
    compiled: bool | None = None  # --compiled/--no-compiled; None: on a GPU, not on a CPU
    compile_mode: str = "default"  # --compile-mode: torch.compile's mode for `compiled`
    # A family's revision as recorded, instead of git's answer in its folder: a `history
    # --backfill` run of an export of one commit (timing/revision.py: revision_at)
    recorded_revisions: dict | None = None


def start_workers(request: RunRequest) -> Prestart:
    """The workers the run will likely need, started now (run/lanes/prestart.py): a wrong guess
    costs only the unused workers, which Prestart.close() ends."""
    slots = guessed_slots(request.device, request.devices, request.workers)
    prestart = Prestart(slots, guessed_environment(slots, request.compiled,
                                                   request.config.variants,
                                                   request.compile_mode))
    timeline.mark(f"parent: {len(slots)} workers spawned")
    return prestart


def starts_workers_early(request: RunRequest) -> bool:
    """Whether the CLI may start the workers before the run command exists: a plain run
    (not --watch, which keeps its own, nor --cluster, whose workers are Dask's) whose
    parallel options can hold together (RunPlaces.check_parallel_options says why not)."""
    return not (request.watch or request.cluster
                or (request.devices and (request.workers or request.device == "cpu")))


@contextlib.contextmanager
def early_workers(request: RunRequest) -> Iterator[Prestart | None]:
    """For `gpubench run` once (not --watch): the cache checked writable, then the workers
    started (None where the run starts its own), for the run command's imports (~0.2 s) to
    happen beside them; they are closed when the run is over."""
    require_writable_cache()
    prestart = start_workers(request) if starts_workers_early(request) else None
    try:
        yield prestart
    finally:
        if prestart is not None:
            prestart.close()

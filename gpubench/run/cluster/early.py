"""`--cluster local` started beside the parent's own start and plan: a fixed cost, cut.

A local cluster's start (a scheduler in this process, one Dask worker process per slot)
and, at each Dask worker's first task, its gpubench worker's start (Python, torch, CUDA:
2.5-5 s on the lent H100/H200 hosts) would come after the parent has imported torch and
planned the run (3-5 s there), one after the other (benchmarks/startup.py: a one-point
--cluster local run then takes 16.2 s against 7.1 s with one worker). So `gpubench
run --cluster local` starts the cluster first thing, on the slots it can tell without
torch (the GPUs NVML sees, or --workers CPU workers): its worker processes at once, each
starting its gpubench worker before anything else (dask_local.py), then the scheduler on
a thread; the parent imports and plans meanwhile. The run adopts that cluster if it is
the one it would start (same device, GPUs and CPU workers), else closes it and starts its
own: a wrong guess costs the unused cluster only.

The cluster logs into the run folder, so that folder is chosen and made first (commands/
run.py); a run that ends before it saved anything removes the folder it made.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from gpubench.run.cluster.lanes import Cluster
from gpubench.run.lanes.prestart import guessed_gpus

# How often a wait for the cluster's start looks up, so that Ctrl-C is handled at once.
JOIN_POLL_S = 0.2


def guessed_cluster(device: str | None, devices: str | None,
                    workers: int | None) -> tuple[str, tuple[str, ...], int] | None:
    """(device, GPUs, CPU workers) of the local cluster `run` will want, from the options
    and NVML alone; None where that cannot be told (or the options are wrong: the run's
    own checks then say why, with nothing started)."""
    gpus = guessed_gpus(device, devices)
    if gpus is None or (gpus and workers) or (devices and not gpus):
        return None
    return shape_of(gpus, workers or 2)


def shape_of(gpus: list[str], cpu_workers: int) -> tuple[str, tuple[str, ...], int]:
    """A local cluster's (device, GPUs, CPU workers): one worker per GPU, or CPU workers."""
    return ("cuda", tuple(gpus), 0) if gpus else ("cpu", (), cpu_workers)


def _import_dask_here() -> None:
    """Dask imported on the calling thread, before the cluster's thread starts: imported on
    that thread, beside the parent's import of torch, both take turns at the import lock
    and the GIL, and the scheduler comes up 1.4-2.2 s after the process starts (CPU
    machine). A missing Dask is the cluster's to report (Cluster.__enter__)."""
    with contextlib.suppress(ImportError):
        import distributed  # noqa: F401


class EarlyCluster:
    """A local cluster being started on a thread; `take` hands it over if it fits."""

    def __init__(self, shape: tuple[str, tuple[str, ...], int], log_dir: Path):
        self.shape = shape
        device, gpus, cpu_workers = shape
        self.cluster: Cluster | None = Cluster("local", device, list(gpus) or None,
                                               cpu_workers or 2, log_dir=log_dir)
        self.failed: BaseException | None = None
        try:  # the worker processes first: they need no Dask in this process
            self.cluster.launch_workers()
        except Exception as exc:  # the run's own start then meets it, and says so
            self.failed = exc
        _import_dask_here()
        self.thread = threading.Thread(target=self._start, daemon=True,
                                       name="gpubench-early-cluster")
        self.thread.start()

    def _start(self) -> None:
        if self.failed is not None:
            return
        try:
            self.cluster.__enter__()
            self.cluster.start_lanes()
        except BaseException as exc:  # the run's own start then meets it, and says so
            self.failed = exc

    def take(self, shape: tuple[str, tuple[str, ...], int]) -> Cluster | None:
        """The started cluster when it is the one the run wants (`shape`), once its
        start ended; None otherwise (it is closed)."""
        self._wait()
        if self.failed is None and self.cluster is not None and shape == self.shape:
            cluster, self.cluster = self.cluster, None
            return cluster
        self.close()
        return None

    def close(self) -> None:
        """Close the cluster unless a run took it (safe to call twice)."""
        self._wait()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def _wait(self) -> None:
        while self.thread.is_alive():
            self.thread.join(JOIN_POLL_S)

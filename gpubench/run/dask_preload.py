"""Dask's preload for the workers of `--cluster local`: each starts its gpubench worker
(Python, torch, CUDA: ~2 s) as the Dask worker itself starts, before it registers.

Why: Cluster.start_lanes began those starts only once every worker had registered, the
client had seen them all and a Client.run had reached each (2 H100s, 2026-11-27: the
gpubench workers began ~0.4 s after their Dask workers, and their start was the run's
critical path). start_lanes still runs (a remote cluster has no preload of ours); a start
begun here is not begun twice (cluster.start_lane_soon).
"""

from __future__ import annotations

import os

DEVICE_ENV = "GPUBENCH_DASK_LANE_DEVICE"  # "cuda" or "cpu": the lanes' device
LOGS_ENV = "GPUBENCH_DASK_LANE_LOGS"  # where their gpubench workers log (the run folder's)


def environ(device: str, log_dir: str | None) -> dict[str, str]:
    """The variables a local cluster's workers get, for dask_setup."""
    return {DEVICE_ENV: device, **({LOGS_ENV: log_dir} if log_dir else {})}


def dask_setup(worker) -> None:
    """Called by Dask in each worker process at its start (the Nanny's `preload`)."""
    device = os.environ.get(DEVICE_ENV)
    if device:
        from gpubench.run.cluster import start_lane_soon

        start_lane_soon(device, os.environ.get(LOGS_ENV) or None, worker)

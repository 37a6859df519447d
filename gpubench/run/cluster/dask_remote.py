"""What runs on a Dask worker for gpubench (run/cluster/lanes.py is the parent's side): the
worker's lane, its gpubench worker process kept between points, started as early as the
Dask worker can start it, and ended when the run ends.

Apart from cluster.py because it is the other end of the wire: these functions are sent by
name to the workers (Dask pickles them by reference), and a local cluster's workers
(dask_local.py) import this module before they import Dask.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
from pathlib import Path

from gpubench.records.point import Task
from gpubench.run.lanes.lane import Lane, Slot, start_quietly

# The gpubench lane of this Dask worker process, kept between tasks (torch imported
# and the CUDA context made once per worker, not once per point).
_LANES: dict[str, Lane] = {}
# The lanes' starts begun by start_lane_soon, joined by the first task.
_STARTING: dict[str, threading.Thread] = {}
_ONE_AT_A_TIME = threading.Lock()  # the GPU's one point at a time, tasks and actor calls


def run_remote(task: dict, device: str, timeout_s: float, build_timeout_s: float,
               log_dir: str | None = None) -> dict:
    """Runs on a Dask worker: the task in this worker's gpubench worker process, one at a
    time (a task of a lane whose worker was lost may come beside this one's actor call)."""
    lane = _lane_once_started(device, log_dir)
    with _ONE_AT_A_TIME:
        return lane.execute(Task.from_dict(task), timeout_s, build_timeout_s).to_dict()


def _lane_once_started(device: str, log_dir: str | None) -> Lane:
    """This Dask worker's lane, once the start that start_lane_soon began has ended."""
    lane = _worker_lane(device, log_dir)
    starting = _STARTING.pop(device, None)
    if starting is not None:
        starting.join()
    return lane


def lane_started(device: str, log_dir: str | None) -> dict:
    """Runs on a Dask worker: its lane's gpubench worker, started (or its start waited
    for); the lane's device facts ({} when it could not start: its first task says why)."""
    lane = _lane_once_started(device, log_dir)
    start_quietly(lane)
    return lane.env


def start_lane_soon(device: str, log_dir: str | None, dask_worker=None,
                    name: str | None = None) -> None:
    """Runs on every Dask worker (Client.run, which passes `dask_worker`), and first thing
    in a local cluster's worker (dask_local.py, which passes its `name`): its lane's
    gpubench worker starts on a thread; the worker's first task waits for it. A start
    that fails is tried again, and reported, by that task."""
    lane = _worker_lane(device, log_dir, dask_worker, name)
    if lane.worker is None and device not in _STARTING:
        thread = threading.Thread(target=start_quietly, args=(lane,), daemon=True,
                                  name="gpubench-lane-start")
        thread.start()
        _STARTING[device] = thread


def _worker_lane(device: str, log_dir: str | None, worker=None, name: str | None = None
                 ) -> Lane:
    """This Dask worker's lane, labelled by the worker's `name` (a local cluster's, known
    before the worker is up) or its address. Its logs go to the run folder for a local
    cluster, else to the node's temporary folder: not to the worker's own scratch folder,
    which Dask deletes when the worker stops (a lost worker's log is the one worth
    reading)."""
    if device not in _LANES:
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0") if device == "cuda" else "0"
        if name is None:
            if worker is None:
                from distributed import get_worker

                worker = get_worker()
            name, where = worker.name, worker.address
        else:
            where = name
        folder = Path(log_dir) if log_dir else Path(tempfile.gettempdir()) / "gpubench-dask"
        folder.mkdir(parents=True, exist_ok=True)
        prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{name}-{os.getpid()}")
        _LANES[device] = Lane(Slot(device, f"{where} {device}:{gpu}"), folder,
                              f"worker-{prefix}")
    return _LANES[device]


def stop_lanes() -> None:
    """Runs on every Dask worker when a run ends: its gpubench worker process exits."""
    for device, starting in list(_STARTING.items()):  # a start still under way ends first
        starting.join()
        _STARTING.pop(device, None)
    for lane in _LANES.values():
        lane.stop()
    _LANES.clear()


def stop_lane(device: str) -> None:
    """Runs on a Dask worker (its LaneActor) when the parent's lane has nothing left:
    this device's gpubench worker process exits; stop_lanes then finds it gone."""
    starting = _STARTING.pop(device, None)
    if starting is not None:
        starting.join()
    lane = _LANES.pop(device, None)
    if lane is not None:
        lane.stop()


def kill_lanes() -> None:
    """This Dask worker's gpubench workers killed now, a point in flight included (the
    parent is gone or done: nothing waits for a result)."""
    for lane in list(_LANES.values()):
        lane.kill()
    _LANES.clear()


def remote_machine_facts() -> dict:
    import importlib.util

    import torch

    return {"has_cuda": torch.cuda.is_available(),
            "has_triton": importlib.util.find_spec("triton") is not None}

"""`run --cluster ADDRESS|local`: points run on Dask workers, each owning one GPU.

Why Dask (distributed): Python-native, small enough to carry to a GPU machine
(~5 MB of wheels), and it already runs on Slurm, PBS and Kubernetes
(dask-jobqueue, dask-kubernetes); gpubench does not grow a scheduler of its own.

How: each Dask worker is started with one GPU visible (CUDA_VISIBLE_DEVICES)
and the resource `GPU=1`; a gpubench task asks for `GPU: 1`, so a worker runs
one point at a time. On the worker, the point runs in gpubench's own worker
process (lane.py), kept between tasks in that Dask worker, so crash isolation,
timeouts and the build cache (per node) behave exactly as in a local run. The
parent keeps one DaskLane per GPU slot of the cluster and feeds them from the
same queue as local lanes (runner.py).

A Dask worker that dies (its node lost, OOM-killed) takes only its task with it:
the scheduler re-queues that task on another worker (once for `local`, where
gpubench sets `allowed-failures` to 1; a remote scheduler uses its own setting),
and a task that loses its worker again is recorded CRASHED. Kernel folders must
be at the same path on every node (a shared file system, or the same checkout).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
import uuid
from pathlib import Path

from gpubench.build import bytecode
from gpubench.errors import EnvironmentProblem, UsageError
from gpubench.records import result as R
from gpubench.records.point import Task
from gpubench.records.worker_result import MalformedWorkerResult
from gpubench.run import dask_logging, dask_preload
from gpubench.run.lane import Lane, Outcome, Slot, start_quietly, visible_gpus

# How long to wait for the first worker: a worker on a busy node imports Python
# packages for a few seconds. Reaching the scheduler itself takes Dask's own connect
# timeout (distributed.comm.timeouts.connect, 30 s unless configured).
WORKER_TIMEOUT_S = 60.0
INSTALL_HINT = "pip install 'gpubench[cluster]' (dask's distributed package)"
# A local cluster listens on the loopback interface only: Dask's comms carry no
# authentication, so anyone who reaches a port could run code in the workers.
LOOPBACK = "127.0.0.1"
TLS_HINT = ("a tls:// scheduler needs Dask's TLS settings: distributed.comm.tls.ca-file, "
            ".client.cert and .client.key (e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE=...)")


def _distributed():
    try:
        import distributed
    except ImportError:
        raise EnvironmentProblem(f"--cluster needs Dask: {INSTALL_HINT}") from None
    return distributed


class Cluster:
    """A connection to a Dask cluster (started here for 'local'), closed on exit."""

    def __init__(self, address: str, device: str, gpus: list[str] | None = None,
                 cpu_workers: int = 2, log_dir: Path | None = None):
        self.address, self.device = address, device
        self.gpus, self.cpu_workers, self.log_dir = gpus, cpu_workers, log_dir
        self.local = None
        self.client = None
        self.logs = contextlib.ExitStack()
        self.scratch: Path | None = None  # Dask's local_directory for 'local', removed on close

    def __enter__(self) -> Cluster:
        if self.client is not None:  # started already (run/early_cluster.py)
            return self
        distributed = _distributed()
        try:
            if self.address == "local":
                if self.log_dir is not None:
                    self.logs.enter_context(dask_logging.environ_restored())
                    self.logs.enter_context(
                        dask_logging.redirected_to(self.log_dir / dask_logging.LOG_NAME))
                self.scratch = Path(tempfile.mkdtemp(prefix="gpubench-dask-"))
                self.local = _local_cluster(distributed, self.device, self.gpus,
                                            self.cpu_workers, self.log_dir, self.scratch,
                                            self._lane_logs())
                target = self.local
            else:
                target = self.address
                _check_tls_settings(distributed, target)
            # A local cluster's workers are on this machine's loopback: each result comes
            # from its worker straight, not through the scheduler (a hop less a point).
            self.client = distributed.Client(target, set_as_default=False,
                                             direct_to_workers=self.local is not None or None)
            self.client.wait_for_workers(1, timeout=WORKER_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise EnvironmentProblem(f"--cluster {self.address}: cannot reach a Dask "
                                     f"scheduler with workers ({exc})") from None
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.client is not None:
            # Each worker's gpubench worker process; one already gone has nothing to stop.
            with contextlib.suppress(Exception):
                self.client.run(stop_lanes)
            self.client.close()
            self.client = None
        if self.local is not None:
            self.local.close()
            self.local = None
        self.logs.close()
        if self.scratch is not None:  # Dask leaves dask-scratch-space/ and its lock files
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def lanes(self) -> list[DaskLane]:
        """One lane per slot: a GPU of a worker (resource GPU), or a worker's thread."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        if self.device == "cuda":
            slots = [address for address, w in sorted(workers.items())
                     for _ in range(int(w.get("resources", {}).get("GPU", 0)))]
            if not slots:
                raise EnvironmentProblem(
                    f"--cluster {self.address}: no worker offers the resource GPU; start "
                    "each worker with one GPU and `--resources GPU=1 --nthreads 1`")
        else:
            slots = [address for address, w in sorted(workers.items())
                     for _ in range(int(w.get("nthreads", 1)))]
        return [DaskLane(self.client, self.device, index, address, self._lane_logs())
                for index, address in enumerate(slots)]

    def _lane_logs(self) -> str | None:
        """Where the workers' gpubench workers log: the run folder for a local cluster."""
        local = self.address == "local"
        return str(self.log_dir / "dask-workers") if self.log_dir and local else None

    def start_lanes(self) -> None:
        """Each Dask worker starts its gpubench worker now, in the background (Python,
        torch, CUDA: seconds), instead of at its first task. A local cluster's workers are
        all waited for first (the cluster counts as up once one is); a worker that comes
        later starts its gpubench worker at its first task, as before."""
        if self.local is not None:
            with contextlib.suppress(TimeoutError, OSError):
                self.client.wait_for_workers(len(self.local.worker_spec),
                                             timeout=WORKER_TIMEOUT_S)
        self.client.run(start_lane_soon, self.device, self._lane_logs())

    def machine_facts(self) -> dict:
        """What a worker of the cluster can run (the parent may have no GPU at all)."""
        return self.client.submit(remote_machine_facts, pure=False).result()


def _check_tls_settings(distributed, address: str) -> None:
    """A tls:// scheduler with no CA file or client certificate in Dask's settings: Dask
    would fail inside Client() with a TypeError (and a traceback at exit)."""
    if not address.startswith("tls://"):
        return
    tls = distributed.Security().get_tls_config_for_role("client")
    if not (tls.get("ca_file") and tls.get("cert")):
        raise EnvironmentProblem(f"--cluster {address}: {TLS_HINT}")


class DaskLane:
    """A lane whose tasks prefer one Dask worker (so that the interference reference
    is timed on each worker alone) but run on any other when that one is gone."""

    def __init__(self, client, device: str, index: int, worker: str,
                 log_dir: str | None = None):
        self.client, self.device, self.worker = client, device, worker
        self.log_dir = log_dir  # where workers keep gpubench's logs (on their node)
        self.slot = Slot(device, f"dask-slot-{index}")
        self.env: dict = {}
        self.future = None

    def start(self) -> dict:
        """Wait until this lane's Dask worker has its gpubench worker (Cluster.start_lanes
        began it): the interference reference's together round then starts together on
        every lane. Its device's facts; {} if that cannot be told (the first task says)."""
        if not self.env:
            future = self._submit("gpubench-start", lane_started, self.device, self.log_dir)
            with contextlib.suppress(Exception):
                self.env = future.result() or {}
        return self.env

    def _submit(self, name: str, function, *args):
        """`function(*args)` on this lane's worker (another one if it is gone), holding
        one GPU there: one task at a time per GPU."""
        return self.client.submit(function, *args,
                                  resources={"GPU": 1} if self.device == "cuda" else None,
                                  key=f"{name}-{uuid.uuid4().hex[:8]}", pure=False,
                                  workers=[self.worker], allow_other_workers=True)

    def execute(self, task: Task, timeout_s: float, build_timeout_s: float,
                on_phase=lambda phase: None) -> Outcome:
        self.future = self._submit(f"gpubench-task{task.id}", run_remote, task.to_dict(),
                                   self.device, timeout_s, build_timeout_s, self.log_dir)
        try:
            sent = self.future.result()
        except Exception as exc:  # KilledWorker, a lost connection, a cancel on Ctrl-C
            return Outcome(failure=R.CRASHED, error=f"the Dask worker running it was lost, "
                                                    f"twice ({type(exc).__name__}: {exc})")
        finally:
            self.future = None
        try:
            outcome = Outcome.from_dict(sent)
        except MalformedWorkerResult as malformed:  # a node with another gpubench, or a bug
            return Outcome(failure=R.ERROR, error=f"the Dask worker's result cannot be "
                                                  f"read: {malformed}")
        self.env = self.env or outcome.device
        return outcome

    def kill(self) -> None:
        """Ctrl-C: cancel the task in flight (a running point ends on its worker)."""
        future = self.future
        if future is not None:
            future.cancel()

    def stop(self) -> None:
        """Nothing to end here: the workers' gpubench processes stop when the cluster
        closes (Cluster.close)."""


# ---------------------------------------------------------------- on a Dask worker

# The gpubench lane of this Dask worker process, kept between tasks (torch imported
# and the CUDA context made once per worker, not once per point).
_LANES: dict[str, Lane] = {}
# The lanes' starts begun by start_lane_soon, joined by the first task.
_STARTING: dict[str, threading.Thread] = {}


def run_remote(task: dict, device: str, timeout_s: float, build_timeout_s: float,
               log_dir: str | None = None) -> dict:
    """Runs on a Dask worker: the task in this worker's gpubench worker process."""
    lane = _lane_once_started(device, log_dir)
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


def start_lane_soon(device: str, log_dir: str | None, dask_worker=None) -> None:
    """Runs on every Dask worker (Client.run, which passes `dask_worker`): its lane's
    gpubench worker starts on a thread; the worker's first task waits for it. A start
    that fails is tried again, and reported, by that task."""
    lane = _worker_lane(device, log_dir, dask_worker)
    if lane.worker is None and device not in _STARTING:
        thread = threading.Thread(target=start_quietly, args=(lane,), daemon=True,
                                  name="gpubench-lane-start")
        thread.start()
        _STARTING[device] = thread


def _worker_lane(device: str, log_dir: str | None, worker=None) -> Lane:
    """This Dask worker's lane. Its logs go to the run folder for a local cluster, else
    to the node's temporary folder: not to the worker's own scratch folder, which Dask
    deletes when the worker stops (a lost worker's log is the one worth reading)."""
    if device not in _LANES:
        if worker is None:
            from distributed import get_worker

            worker = get_worker()
        gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0") if device == "cuda" else "0"
        label = f"{worker.address} {device}:{gpu}"
        folder = Path(log_dir) if log_dir else Path(tempfile.gettempdir()) / "gpubench-dask"
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{worker.name}-{os.getpid()}")
        _LANES[device] = Lane(Slot(device, label), folder, f"worker-{name}")
    return _LANES[device]


def stop_lanes() -> None:
    """Runs on every Dask worker when a run ends: its gpubench worker process exits."""
    for device, starting in list(_STARTING.items()):  # a start still under way ends first
        starting.join()
        _STARTING.pop(device, None)
    for lane in _LANES.values():
        lane.stop()
    _LANES.clear()


def remote_machine_facts() -> dict:
    import importlib.util

    import torch

    return {"has_cuda": torch.cuda.is_available(),
            "has_triton": importlib.util.find_spec("triton") is not None}


# ---------------------------------------------------------------- --cluster local


def _local_cluster(distributed, device: str, gpus: list[str] | None, cpu_workers: int,
                   log_dir: Path | None, scratch: Path, lane_logs: str | None):
    """One worker process per GPU (CUDA_VISIBLE_DEVICES=that GPU, resource GPU=1), or
    `cpu_workers` single-threaded CPU workers, each starting its gpubench worker at once
    (dask_preload.py); a task that loses its worker is re-queued once (allowed-failures
    1), then recorded CRASHED."""
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}))
    if log_dir is not None:
        environ.update(dask_logging.worker_environ(log_dir / dask_logging.LOG_NAME))
    environ.update(bytecode.child_overrides(dict(os.environ)))  # Dask's imports, and torch's
    environ.update(dask_preload.environ(device, lane_logs))
    # Dask's scratch files (scheduler and workers) go to `scratch`, removed on close.
    dask.config.set({"distributed.scheduler.allowed-failures": 1,
                     "distributed.nanny.pre-spawn-environ": environ,
                     "temporary-directory": str(scratch)})
    # Every port on loopback: the nanny's, the worker's comm and its HTTP server (port 0:
    # any free one; Dask's default would take 8787 on every interface).
    common = {"nthreads": 1, "local_directory": str(scratch), "host": LOOPBACK,
              "dashboard_address": f"{LOOPBACK}:0", "preload": [dask_preload.__name__]}
    if device == "cuda":
        chosen = gpus or visible_gpus()
        if not chosen:
            raise UsageError("--cluster local: no GPU is visible")
        specs = {f"gpu{gpu}": {"cls": distributed.Nanny,
                               "options": {**common, "resources": {"GPU": 1},
                                           "env": {"CUDA_VISIBLE_DEVICES": gpu}}}
                 for gpu in chosen}
    else:
        specs = {f"cpu{index}": {"cls": distributed.Nanny, "options": dict(common)}
                 for index in range(cpu_workers)}
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": LOOPBACK, "dashboard_address": f"{LOOPBACK}:0",
                             "dashboard": False}}
    # silence_logs=False: Dask's log lines are already sent to the run folder (dask_logging)
    return distributed.SpecCluster(workers=specs, scheduler=scheduler, silence_logs=False)

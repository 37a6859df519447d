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
same queue as local lanes (runner.py). On a local cluster (dask_local.py starts
its workers) a lane's points go to a Dask actor on its worker instead of tasks:
one round trip a point, not the scheduler's (DaskLane says how much that saves).

A Dask worker that dies (its node lost, OOM-killed) takes only its point with it:
the point is tried once more on another worker (for `local` by the lane itself, as a
task, with `allowed-failures` 0; on a remote cluster the scheduler re-queues the task,
by its own setting), and a point that loses its worker again is recorded CRASHED.
Kernel folders must be at the same path on every node (a shared file system, or the
same checkout).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
import uuid
from pathlib import Path

from gpubench.build import bytecode
from gpubench.errors import EnvironmentProblem, UsageError
from gpubench.records import result as R
from gpubench.records.point import Task
from gpubench.records.worker_result import MalformedWorkerResult
from gpubench.run import timeline
from gpubench.run.cluster import dask_logging
from gpubench.run.cluster.dask_local import LocalWorkers, WorkerSpec
from gpubench.run.cluster.dask_remote import (
    kill_lanes,
    lane_started,
    remote_machine_facts,
    run_remote,
    start_lane_soon,
    stop_lane,
    stop_lanes,
)
from gpubench.run.lanes.lane import Outcome, Slot, check_cpu_workers, visible_gpus
from gpubench.run.lanes.scratch import owned_dir

# How long to wait for the first worker: a worker on a busy node imports Python
# packages for a few seconds. Reaching the scheduler itself takes Dask's own connect
# timeout (distributed.comm.timeouts.connect, 30 s unless configured).
WORKER_TIMEOUT_S = 60.0
WORKER_POLL_S = 0.5  # how often that wait looks whether a local cluster's workers died
IDENTITY_TRIES = 3  # asking the scheduler for its workers: a comm error may pass
KILL_POLL_S = 0.2  # how often a lane waiting on an actor looks whether Ctrl-C came
# A local cluster's Dask scratch folder: <prefix><pid>-<start time>-<random> (scratch.py)
DASK_PREFIX = "gpubench-dask-"
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
        self.local = None  # the scheduler of a local cluster (in this process)
        self.workers: LocalWorkers | None = None  # a local cluster's worker processes
        self.interrupted = threading.Event()  # a lane was killed (Ctrl-C): close kills
        self.client = None
        self.logs = contextlib.ExitStack()
        self.scratch: Path | None = None  # Dask's local_directory for 'local', removed on close

    def __enter__(self) -> Cluster:
        if self.client is not None:  # started already (run/cluster/early.py)
            return self
        distributed = _distributed()
        try:
            if self.address == "local":
                self.launch_workers()
                if self.log_dir is not None:
                    self.logs.enter_context(
                        dask_logging.redirected_to(self.log_dir / dask_logging.LOG_NAME))
                self.local = _local_scheduler(distributed, self.scratch)
                self.workers.connect(self.local.scheduler_address)
                target = self.local
            else:
                target = self.address
                _check_tls_settings(distributed, target)
            # A local cluster's workers are on this machine's loopback: each result comes
            # from its worker straight, not through the scheduler (a hop less a point).
            self.client = distributed.Client(target, set_as_default=False,
                                             direct_to_workers=self.local is not None or None)
            self._wait_for_workers(1)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise EnvironmentProblem(f"--cluster {self.address}: cannot reach a Dask "
                                     f"scheduler with workers ({exc})") from None
        except BaseException:
            self.close()
            raise
        return self

    def launch_workers(self) -> None:
        """`local`: start the Dask worker processes now, before this process imports Dask
        (dask_local.py says why); each starts its gpubench worker at once."""
        if self.address != "local" or self.workers is not None:
            return
        if self.device != "cuda":  # before any folder or process is made for them
            check_cpu_workers(self.cpu_workers)
        # named after this process, so a run killed with -9 leaves none for good (scratch.py)
        self.scratch = Path(owned_dir(DASK_PREFIX))
        dask_log = self.log_dir / dask_logging.LOG_NAME if self.log_dir else None
        environ = {**os.environ, **bytecode.child_overrides(dict(os.environ)),
                   **(dask_logging.worker_environ(dask_log) if dask_log else {})}
        self.workers = LocalWorkers(self._worker_specs(), environ, dask_log)

    def _worker_specs(self) -> list[WorkerSpec]:
        """One worker per GPU (that GPU alone visible to it), or `cpu_workers` of them."""
        lane_logs, scratch = self._lane_logs(), str(self.scratch)
        if self.device == "cuda":
            chosen = self.gpus or visible_gpus()
            if not chosen:
                raise UsageError("--cluster local: no GPU is visible")
            return [WorkerSpec(f"gpu{gpu}", "cuda", gpu, lane_logs, scratch, LOOPBACK)
                    for gpu in chosen]
        return [WorkerSpec(f"cpu{index}", "cpu", None, lane_logs, scratch, LOOPBACK)
                for index in range(self.cpu_workers)]

    def _wait_for_workers(self, count: int) -> None:
        """Until `count` workers registered; a local cluster whose worker processes all
        exited says so at once rather than after WORKER_TIMEOUT_S."""
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while True:
            try:
                self.client.wait_for_workers(count, timeout=WORKER_POLL_S)
                return
            except TimeoutError:
                if self.workers is not None and self.workers.all_exited():
                    raise EnvironmentProblem(
                        "--cluster local: its Dask workers exited as they started (their "
                        "output is in the run folder's dask.log)") from None
                if time.monotonic() > deadline:
                    raise

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.client is not None:
            # Each worker's gpubench worker process; one already gone has nothing to stop.
            # After Ctrl-C a point may still run there: killed, not waited for.
            with contextlib.suppress(Exception):
                self.client.run(kill_lanes if self.interrupted.is_set() else stop_lanes)
            timeline.mark("parent: Dask lanes stopped")
            self.client.close()
            self.client = None
        if self.workers is not None:
            self.workers.close()
            self.workers = None
            timeline.mark("parent: Dask workers exited")
        if self.local is not None:
            self.local.close()
            self.local = None
            timeline.mark("parent: Dask scheduler closed")
        self.logs.close()
        if self.scratch is not None:  # Dask leaves dask-scratch-space/ and its lock files
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def lanes(self) -> list[DaskLane]:
        """One lane per slot: a GPU of a worker (resource GPU), or a worker's thread."""
        workers = registered_workers(self.client)
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
            if not slots:  # a run never falls back to this machine's own worker
                raise EnvironmentProblem(f"--cluster {self.address}: no Dask worker left")
        return [DaskLane(self.client, self.device, index, address, self._lane_logs(),
                         direct=self.local is not None, interrupted=self.interrupted)
                for index, address in enumerate(slots)]

    def _lane_logs(self) -> str | None:
        """Where the workers' gpubench workers log: the run folder for a local cluster."""
        local = self.address == "local"
        return str(self.log_dir / "dask-workers") if self.log_dir and local else None

    def start_lanes(self) -> None:
        """Each Dask worker starts its gpubench worker now, in the background (Python,
        torch, CUDA: seconds), instead of at its first task; a worker that comes later
        starts it at its first task. A local cluster's workers started theirs as they
        began (dask_local.py): they are all waited for (the cluster counts as up once
        one is)."""
        if self.workers is not None:  # each started its gpubench worker as it began
            with contextlib.suppress(TimeoutError, OSError, EnvironmentProblem):
                self._wait_for_workers(len(self.workers.specs))
            return
        self.client.run(start_lane_soon, self.device, self._lane_logs())

    def machine_facts(self) -> dict:
        """What a worker of the cluster can run (the parent may have no GPU at all)."""
        return self.client.submit(remote_machine_facts, pure=False).result()


def registered_workers(client) -> dict[str, dict]:
    """The scheduler's workers now, by address, asked of the scheduler itself. Not
    Client.scheduler_info(): where its query fails (a scheduler slow to answer on a busy
    host) it returns, without a word, what it cached at connect time, which may be no
    worker at all, and a run with no lane ran its points on this machine instead."""
    for attempt in range(IDENTITY_TRIES):
        if attempt:
            time.sleep(WORKER_POLL_S)
        with contextlib.suppress(OSError):
            return client.sync(client.scheduler.identity, n_workers=-1)["workers"]
    raise EnvironmentProblem("the Dask scheduler did not say which workers it has")


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
    is timed on each worker alone) but run on any other when that one is gone.

    On a local cluster (`direct`) the points go to a Dask actor on that worker
    (LaneActor): a call goes from this process to the worker and back, where a task goes
    through the scheduler both ways and its result is fetched after (1.5 ms against 13.3
    ms a round trip on the CPU machine; through tasks, a lane's gap between points is 22
    ms on 2 H200s, against 11 ms for a local lane). A remote cluster's
    workers may not be reachable from here, so there every point is a task."""

    def __init__(self, client, device: str, index: int, worker: str,
                 log_dir: str | None = None, direct: bool = False,
                 interrupted: threading.Event | None = None):
        self.client, self.device, self.worker = client, device, worker
        self.log_dir = log_dir  # where workers keep gpubench's logs (on their node)
        self.slot, self.index = Slot(device, f"dask-slot-{index}"), index
        self.env: dict = {}
        self.direct = direct
        self.actor = self.actor_future = None  # the LaneActor, once made (`direct` only)
        self.fell_back = False  # its worker was lost: tasks from then on
        self.future = None  # the task in flight (tasks only)
        self.killed = interrupted or threading.Event()  # the cluster's, shared by its lanes

    def start(self) -> dict:
        """Wait until this lane's Dask worker has its gpubench worker (Cluster.start_lanes
        began it): the interference reference's together round then starts together on
        every lane. Its device's facts; {} if that cannot be told (the first task says)."""
        if not self.env:
            with contextlib.suppress(Exception):
                if self._has_actor():
                    self.env = self._awaited(self._call("start")) or {}
                else:
                    future = self._submit("gpubench-start", lane_started, self.device,
                                          self.log_dir)
                    self.env = future.result() or {}
        return self.env

    @property
    def on_this_host(self) -> bool:
        """A local cluster's lane runs on this machine; a remote one's may not."""
        return self.direct

    def _has_actor(self) -> bool:
        """Whether this lane's calls go to its actor, made at the lane's first call (a
        local cluster's lane, until its worker is lost); otherwise they are tasks."""
        if self.direct and self.actor is None and not self.fell_back:
            with contextlib.suppress(Exception):
                self.actor = self._made_actor()
        return self.actor is not None

    def _made_actor(self):
        """The LaneActor on this lane's worker. A worker that is lost takes its actor
        with it: `execute` then tries the point once more as a task on another worker."""
        # The future is kept: the scheduler releases an actor nothing holds.
        self.actor_future = self.client.submit(
            LaneActor, self.device, self.log_dir, actor=True, pure=False,
            key=f"gpubench-lane-{uuid.uuid4().hex[:8]}", workers=[self.worker],
            allow_other_workers=True)
        return self.actor_future.result()

    def _submit(self, name: str, function, *args):
        """`function(*args)` on this lane's worker (another one if it is gone), holding
        one GPU there: one task at a time per GPU."""
        return self.client.submit(function, *args,
                                  resources={"GPU": 1} if self.device == "cuda" else None,
                                  key=f"{name}-{uuid.uuid4().hex[:8]}", pure=False,
                                  workers=[self.worker], allow_other_workers=True)

    def _call(self, method: str, *args):
        """Call the actor's `method`: a handle binds to the current client (Dask's
        get_client) when first used, and this run's client is not the process default."""
        with self.client.as_current():
            return getattr(self.actor, method)(*args)

    def _awaited(self, call):
        """An actor call's answer, looking every KILL_POLL_S whether Ctrl-C ended the run
        (an actor call cannot be cancelled)."""
        while True:
            if self.killed.is_set():
                raise InterruptedError("interrupted (Ctrl-C)")
            try:
                return call.result(timeout=KILL_POLL_S)
            except TimeoutError:
                continue

    def execute(self, task: Task, timeout_s: float, build_timeout_s: float,
                on_phase=lambda phase: None) -> Outcome:
        args = (task.to_dict(), self.device, timeout_s, build_timeout_s, self.log_dir)
        # A point whose worker is lost is tried once more, on another worker: here for a
        # local cluster (allowed-failures 0 there), by a remote scheduler's own setting.
        tries = 2 if self.direct else 1
        for attempt in range(1, tries + 1):
            try:
                sent = self._run_once(task.id, args)
                break
            except InterruptedError as stop:
                return Outcome(failure=R.CRASHED, error=str(stop))
            except Exception as exc:  # KilledWorker, a lost connection, a cancel on Ctrl-C
                if attempt == tries:
                    return Outcome(failure=R.CRASHED,
                                   error=f"the Dask worker running it was lost, twice "
                                         f"({type(exc).__name__}: {exc})")
                self._leave_lost_worker()
        try:
            outcome = Outcome.from_dict(sent)
        except MalformedWorkerResult as malformed:  # a node with another gpubench, or a bug
            return Outcome(failure=R.ERROR, error=f"the Dask worker's result cannot be "
                                                  f"read: {malformed}")
        self.env = self.env or outcome.device
        return outcome

    def _run_once(self, task_id: int, args: tuple) -> dict:
        """One try: through the lane's actor, or as a task (a remote cluster's lane, or
        once the actor's worker was lost)."""
        if self._has_actor():
            return self._awaited(self._call("run", *args))
        self.future = self._submit(f"gpubench-task{task_id}", run_remote, *args)
        try:
            return self.future.result()
        finally:
            self.future = None

    def _leave_lost_worker(self) -> None:
        """After a lost worker: no actor any more (its points are tasks), and another
        worker preferred."""
        self.actor = self.actor_future = None
        self.fell_back = True
        self.worker = self._another_worker() or self.worker

    def _another_worker(self) -> str | None:
        """A worker other than this lane's lost one, for its points from now on: the
        scheduler may not have noticed the loss yet, and a task it sent to the dead worker
        would count as its second loss (allowed-failures 0)."""
        with contextlib.suppress(Exception):
            workers = registered_workers(self.client)
            others = sorted(address for address in workers if address != self.worker)
            if others:
                return others[self.index % len(others)]
        return None

    def kill(self) -> None:
        """Ctrl-C: cancel the task in flight, or stop waiting for the actor's answer (a
        running point ends on its worker when the cluster closes)."""
        self.killed.set()
        future = self.future
        if future is not None:
            future.cancel()

    def stop(self) -> None:
        """This lane has nothing left (the runner's lane thread, as a local lane's worker
        ends): its gpubench worker ends now, beside the lanes still measuring, through its
        actor; a lane without one ends with the cluster (Cluster.close, which stops every
        worker's lanes whatever is left). A lane's gpubench worker takes ~0.2 s to exit on
        4 H200s, which close() would wait for on every lane after the last point."""
        if self.killed.is_set() or self.actor is None:
            return
        with contextlib.suppress(Exception):
            self._awaited(self._call("stop"))


class LaneActor:
    """Runs on a Dask worker: one lane's calls (DaskLane says why an actor). Its methods
    run on the worker's actor thread; tasks run on its task thread: run_remote lets one
    point at a time reach the gpubench worker either way."""

    def __init__(self, device: str, log_dir: str | None):
        self.device, self.log_dir = device, log_dir

    def start(self) -> dict:
        return lane_started(self.device, self.log_dir)

    def stop(self) -> None:
        stop_lane(self.device)

    def run(self, task: dict, device: str, timeout_s: float, build_timeout_s: float,
            log_dir: str | None) -> dict:
        return run_remote(task, device, timeout_s, build_timeout_s, log_dir)


# ---------------------------------------------------------------- --cluster local


def _local_scheduler(distributed, scratch: Path):
    """The scheduler of a local cluster, in this process, on loopback; its workers are
    dask_local.py's processes. A point that loses its worker is tried once more, as a
    task, then recorded CRASHED."""
    import dask

    # Dask's scratch files go to `scratch`, removed on close. allowed-failures 0: a lane
    # tries a point whose worker was lost once more itself (DaskLane.execute).
    dask.config.set({"distributed.scheduler.allowed-failures": 0,
                     "temporary-directory": str(scratch)})
    # Every port on loopback (port 0: any free one; Dask's default dashboard would take
    # 8787 on every interface).
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": LOOPBACK, "dashboard_address": f"{LOOPBACK}:0",
                             "dashboard": False}}
    # silence_logs=False: Dask's log lines are already sent to the run folder (dask_logging)
    return distributed.SpecCluster(workers={}, scheduler=scheduler, silence_logs=False)

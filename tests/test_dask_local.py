"""A local cluster's Dask workers are gpubench's own processes (run/cluster/dask_local.py), and its
lanes call actors (run/cluster/lanes.py DaskLane): what they do when things go wrong."""

from __future__ import annotations

import threading
import time

import pytest

from gpubench.errors import EnvironmentProblem
from gpubench.run.cluster import dask_local
from gpubench.run.cluster import lanes as cluster


def test_a_worker_spec_travels_through_the_environment(monkeypatch):
    spec = dask_local.WorkerSpec("gpu1", "cuda", "1", "/runs/r1/dask-workers", "/tmp/s",
                                 "127.0.0.1")
    environ = spec.to_environ()
    assert environ["CUDA_VISIBLE_DEVICES"] == "1"  # the worker sees its GPU alone
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert dask_local.WorkerSpec.from_environ() == spec
    assert spec.resources() == {"GPU": 1}
    cpu = dask_local.WorkerSpec("cpu0", "cpu", None, None, "/tmp/s", "127.0.0.1")
    assert cpu.resources() == {} and "CUDA_VISIBLE_DEVICES" not in cpu.to_environ()


def test_workers_that_die_at_start_are_reported_at_once(tmp_path, monkeypatch):
    """Without a nanny nothing starts a dead worker again: a cluster whose workers all
    exited says so, not after the 60 s wait for workers."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(dask_local.WorkerSpec, "to_environ",
                        lambda self: {dask_local.SPEC_ENV: "not a spec"})
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem, match="exited as they started"):
        cluster.Cluster("local", "cpu", cpu_workers=1, log_dir=tmp_path).__enter__()
    assert time.monotonic() - started < 30
    assert "Traceback" in (tmp_path / "dask.log").read_text()  # the worker's own stderr


class _NeverAnswers:
    def result(self, timeout=None):
        time.sleep(timeout)
        raise TimeoutError


def test_ctrl_c_ends_the_wait_for_an_actor():
    """An actor call cannot be cancelled: the lane stops waiting for it when killed."""
    lane = cluster.DaskLane(client=None, device="cpu", index=0, worker="tcp://127.0.0.1:1",
                            direct=True)
    threading.Timer(0.3, lane.kill).start()
    started = time.monotonic()
    with pytest.raises(InterruptedError):
        lane._awaited(_NeverAnswers())
    assert time.monotonic() - started < 0.3 + 2 * cluster.KILL_POLL_S + 0.5


class _LostActor:
    def __getattr__(self, name):
        raise OSError("Unable to contact Actor's worker")


class _Client:
    """A Dask client whose scheduler lists two workers (cluster.registered_workers asks
    it through client.sync(client.scheduler.identity))."""

    def __init__(self):
        self.submitted = []
        self.scheduler = self

    def identity(self, n_workers=-1):
        return {"workers": {"tcp://127.0.0.1:1": {}, "tcp://127.0.0.1:2": {}}}

    def sync(self, function, *args, **kwargs):
        return function(*args, **kwargs)

    def as_current(self):
        import contextlib

        return contextlib.nullcontext()

    def submit(self, function, *args, **options):
        self.submitted.append((function, options))
        done = {"result": None, "failure": None, "error": None, "device": {"name": "x"}}

        class Future:
            def result(self):
                return done

        return Future()


def test_a_lost_actor_hands_its_point_to_a_task_once_and_for_good():
    """The actor's worker is gone: the point is tried again as a task, on another worker
    (the scheduler may still list the lost one), and the lane's later points too."""
    from gpubench.records.point import Shape, Task

    client = _Client()
    lane = cluster.DaskLane(client, "cuda", 0, "tcp://127.0.0.1:1", direct=True)
    lane.actor = _LostActor()
    task = Task(3, "square", "/nowhere", "torch", "float32", Shape({"n": 4}), 0)
    lane.execute(task, 10.0, 10.0)
    assert lane.actor is None and len(client.submitted) == 1
    function, options = client.submitted[0]
    assert function is cluster.run_remote and options["allow_other_workers"]
    assert options["workers"] == ["tcp://127.0.0.1:2"]
    assert options["resources"] == {"GPU": 1}  # a task holds the GPU
    lane.execute(task, 10.0, 10.0)
    assert len(client.submitted) == 2



class _LosingClient(_Client):
    """Every task's worker is lost until `losses` tasks were."""

    def __init__(self, losses: int):
        super().__init__()
        self.losses = losses

    def submit(self, function, *args, **options):
        future = super().submit(function, *args, **options)
        if len(self.submitted) > self.losses:
            return future

        class Lost:
            def result(self):
                raise OSError("the worker was lost")

        return Lost()


@pytest.mark.parametrize("losses, status", [(1, None), (2, "crashed")])
def test_a_local_lanes_point_is_tried_once_more_after_its_worker_is_lost(losses, status):
    """A lane without an actor (its worker was lost before) sends tasks: one whose worker
    is lost is tried once more, on another worker; lost again, it is CRASHED."""
    from gpubench.records.point import Shape, Task

    client = _LosingClient(losses)
    lane = cluster.DaskLane(client, "cuda", 0, "tcp://127.0.0.1:1", direct=True)
    lane.fell_back = True
    outcome = lane.execute(Task(3, "square", "/nowhere", "torch", "float32",
                                Shape({"n": 4}), 0), 10.0, 10.0)
    assert len(client.submitted) == 2
    assert client.submitted[1][1]["workers"] == ["tcp://127.0.0.1:2"]
    assert outcome.failure == status
    if status:
        assert "lost, twice" in outcome.error


def test_local_workers_run_without_dasks_profiler_unless_asked():
    """Its 10 ms stack sampling feeds a dashboard nothing reads (dask_local.PROFILER_ENV)."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    key = "distributed.worker.profile.enabled"
    with dask.config.set({key: True}):
        dask_local.quiet_profiler({})
        assert dask.config.get(key) is False
    with dask.config.set({key: True}):
        dask_local.quiet_profiler({dask_local.PROFILER_ENV: "True"})
        assert dask.config.get(key) is True


class StaleClient:
    """A client whose cached scheduler_info predates the workers (what Client keeps when
    its identity query fails on a busy host) and whose first direct query fails too."""

    def __init__(self, failures: int):
        self.failures = failures
        self.scheduler = self

    def scheduler_info(self, n_workers=-1):
        return {"workers": {}}

    def identity(self, n_workers=-1):
        return {"workers": {"tcp://127.0.0.1:1": {"nthreads": 1},
                            "tcp://127.0.0.1:2": {"nthreads": 1}}}

    def sync(self, function, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise OSError("timed out")
        return function(*args, **kwargs)


def test_lanes_come_from_the_scheduler_not_a_stale_cache(monkeypatch):
    """Under load a `--cluster local` run found no lane (scheduler_info's cache held no
    worker) and ran its points on this machine's own worker; the lanes are now asked of
    the scheduler, a failed query asked again, and no worker at all is an error."""
    monkeypatch.setattr(cluster, "WORKER_POLL_S", 0.01)
    run = cluster.Cluster("local", "cpu", cpu_workers=2)
    run.client = StaleClient(failures=1)
    lanes = run.lanes()
    assert [lane.worker for lane in lanes] == ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"]
    run.client = StaleClient(failures=cluster.IDENTITY_TRIES)
    with pytest.raises(EnvironmentProblem, match="which workers"):
        run.lanes()
    run.client.failures, run.client.identity = 0, lambda n_workers=-1: {"workers": {}}
    with pytest.raises(EnvironmentProblem, match="no Dask worker"):
        run.lanes()

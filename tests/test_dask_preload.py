"""A local cluster's workers start their gpubench workers from Dask's preload
(run/dask_preload.py); one without the variables (a remote cluster's) starts nothing."""

from __future__ import annotations

from gpubench.run import cluster, dask_preload


def test_the_preload_starts_the_lane_it_is_told_of(monkeypatch):
    started = []
    monkeypatch.setattr(cluster, "start_lane_soon",
                        lambda device, logs, worker: started.append((device, logs, worker)))
    for name, value in dask_preload.environ("cuda", "/runs/r1/dask-workers").items():
        monkeypatch.setenv(name, value)
    dask_preload.dask_setup("the worker")
    assert started == [("cuda", "/runs/r1/dask-workers", "the worker")]


def test_a_worker_without_its_variables_starts_nothing(monkeypatch):
    started = []
    monkeypatch.setattr(cluster, "start_lane_soon", lambda *args: started.append(args))
    monkeypatch.delenv(dask_preload.DEVICE_ENV, raising=False)
    dask_preload.dask_setup("the worker")
    assert started == [] and dask_preload.environ("cpu", None) == {
        dask_preload.DEVICE_ENV: "cpu"}


def test_the_parent_waits_for_the_clusters_processes_but_not_forever(monkeypatch):
    """EarlyCluster holds the parent's own imports back until the cluster's worker
    processes exist, or its thread ended, or SPAWN_WAIT_S passed."""
    import threading
    import time

    from gpubench.run import early_cluster

    early = early_cluster.EarlyCluster.__new__(early_cluster.EarlyCluster)
    stop = threading.Event()
    early.thread = threading.Thread(target=stop.wait, daemon=True)
    early.thread.start()
    monkeypatch.setattr(early_cluster.multiprocessing, "active_children", lambda: [1, 2])
    started = time.monotonic()
    early._wait_for_spawn(2)
    assert time.monotonic() - started < 0.5  # both spawned: at once
    monkeypatch.setattr(early_cluster.multiprocessing, "active_children", lambda: [])
    monkeypatch.setattr(early_cluster, "SPAWN_WAIT_S", 0.2)
    started = time.monotonic()
    early._wait_for_spawn(2)
    assert 0.15 <= time.monotonic() - started < 1.5  # never spawned: the bound
    stop.set()
    early.thread.join()
    started = time.monotonic()
    early._wait_for_spawn(2)
    assert time.monotonic() - started < 0.15  # its start ended: at once

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

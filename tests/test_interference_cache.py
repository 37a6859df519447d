"""The interference reference reused (run/interference/cache.py): kept per set of GPUs,
given back under this run's device ids, never past its age, never for CPU workers."""

from __future__ import annotations

import pytest
from test_runner_overlap import two_groups

from gpubench.records.build_info import BuildInfo
from gpubench.run.interference import cache
from gpubench.run.interference.timing import InterferenceProbe
from gpubench.run.lanes.lane import Outcome, Slot
from gpubench.run.runner import Runner
from gpubench.timing.settings import TimingSettings


def facts(device_id: str, uuid: str, **more) -> dict:
    return {"device_id": device_id, "gpu_uuid": uuid, "host": "node", "driver": "580",
            "torch": "2.11", **more}


TWO = [facts("cuda:0", "GPU-a"), facts("cuda:1", "GPU-b")]


def test_the_key_is_the_set_of_gpus_and_how_the_run_is_spread():
    key = cache.key_for(TWO, "Lane", "ref")
    assert key == cache.key_for(list(reversed(TWO)), "Lane", "ref")  # order is not the set
    assert key != cache.key_for(TWO, "DaskLane", "ref")
    assert key != cache.key_for(TWO, "Lane", "another reference")
    assert key != cache.key_for([TWO[0], facts("cuda:1", "GPU-c")], "Lane", "ref")
    assert key != cache.key_for([facts("cuda:0", "GPU-a", driver="590"), TWO[1]], "Lane",
                                "ref")
    assert cache.key_for([TWO[0], {"device_id": "cuda:1"}], "Lane", "ref") is None
    assert cache.gpu_ids([TWO[0], facts("cuda:1", "GPU-a")]) is None  # one GPU twice


def test_kept_samples_come_back_under_this_runs_device_ids(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    alone = {("cuda:0", "matmul N=256"): [1.0, 1.1], ("cuda:1", "matmul N=256"): [2.0]}
    together = {("cuda:0", "matmul N=256"): [1.2], ("cuda:1", "matmul N=256"): [2.2]}
    cache.store("k", alone, together, {"GPU-a": "cuda:0", "GPU-b": "cuda:1"}, "run-1")
    kept = cache.recent("k", cache.time.time(), 60)
    assert kept.run_id == "run-1"
    # The same GPUs reached through Dask: other device ids, the same samples.
    ids = {"GPU-a": "tcp://w1 cuda:0", "GPU-b": "tcp://w2 cuda:0"}
    again_alone, again_together = kept.samples_for(ids)
    assert again_alone == {("tcp://w1 cuda:0", "matmul N=256"): [1.0, 1.1],
                           ("tcp://w2 cuda:0", "matmul N=256"): [2.0]}
    assert again_together[("tcp://w2 cuda:0", "matmul N=256")] == [2.2]
    assert cache.recent("k", kept.measured_at + 61, 60) is None  # too old
    assert cache.recent("k", kept.measured_at, 0) is None  # 0: always measure
    assert cache.recent("missing", kept.measured_at, 60) is None
    (tmp_path / "interference" / "k.json").write_text("{not json")
    assert cache.recent("k", kept.measured_at, 60) is None


@pytest.mark.parametrize("value, age", [(None, cache.MAX_AGE_S), ("0", 0.0), ("90", 90.0),
                                        ("-5", 0.0), ("an hour", 0.0)])
def test_the_age_setting_never_reuses_more_than_asked(value, age):
    environ = {} if value is None else {cache.MAX_AGE_ENV: value}
    assert cache.max_age_s(environ) == age


class GpuLane:
    """A lane with a GPU's facts; its points fail at once (nothing is run)."""

    def __init__(self, device_id: str, uuid: str):
        self.slot, self.env = Slot("cuda", device_id), facts(device_id, uuid)

    def start(self) -> dict:
        return self.env

    def execute(self, task, timeout_s, build_timeout_s, on_phase=None) -> Outcome:
        return Outcome(failure="ERROR", error="not run: a test lane")

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


def run_twice_on_two_gpus(tmp_path, monkeypatch, lanes=lambda: [GpuLane("cuda:0", "GPU-a"),
                                                                 GpuLane("cuda:1", "GPU-b")]):
    """Two runs on the same two GPUs; the reference's rounds counted instead of timed."""
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    rounds = []

    def probes(self, lane, points, timing):
        rounds.append(lane.slot.label)
        return {(lane.slot.label, "matmul N=256 bfloat16"): [1e-3, 1.01e-3, 0.99e-3] * 5}

    monkeypatch.setattr(InterferenceProbe, "_time_probes", probes)
    runs = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        runner = Runner("cuda", tmp_path / name, TimingSettings(), lanes=lanes())
        runner.run(two_groups("cuda"))
        runs.append(runner)
    return runs, rounds


def test_a_second_run_on_the_same_gpus_reuses_the_first_ones_reference(tmp_path,
                                                                       monkeypatch):
    (first, second), rounds = run_twice_on_two_gpus(tmp_path, monkeypatch)
    assert sorted(rounds) == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]  # the first run's
    assert first.env["interference"]["source"] == ""
    assert second.env["interference"]["source"].startswith("reused: measured ")
    assert "by run first" in second.interference.summary()
    assert [s.device_id for s in second.interference.shifts] == ["cuda:0", "cuda:1"]


def test_a_max_age_of_zero_measures_every_run(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.MAX_AGE_ENV, "0")
    (_, second), rounds = run_twice_on_two_gpus(tmp_path, monkeypatch)
    assert len(rounds) == 8 and second.env["interference"]["source"] == ""


def test_other_gpus_are_measured_again(tmp_path, monkeypatch):
    made = iter([[GpuLane("cuda:0", "GPU-a"), GpuLane("cuda:1", "GPU-b")],
                 [GpuLane("cuda:0", "GPU-a"), GpuLane("cuda:1", "GPU-c")]])
    (_, second), rounds = run_twice_on_two_gpus(tmp_path, monkeypatch, lambda: next(made))
    assert len(rounds) == 8 and second.env["interference"]["source"] == ""


class CompilingBuilds:
    """A build phase that compiled `count` builds while the reference was measured."""

    def __init__(self, count: int):
        self.count = count

    def start(self, report=None) -> None:
        pass

    def compiled_during(self, since: float) -> int:
        return self.count

    def ready(self, point) -> bool:
        return True

    def failed(self, point):
        return None

    def note_worker_build(self, point, build) -> None:
        pass

    def build_for_row(self, point):
        return None

    def summary(self) -> dict:
        return {}

    def stop(self) -> None:
        pass


def test_a_reference_measured_beside_compiling_builds_says_so_when_reused(tmp_path,
                                                                          monkeypatch):
    """A cold run's reference shares the host's cores with its compilers: its line, and
    the warm run's that reuses it, say how many builds compiled meanwhile."""
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(InterferenceProbe, "_time_probes", lambda self, lane, points, timing: {
        (lane.slot.label, "matmul N=256 bfloat16"): [1e-3, 1.01e-3, 0.99e-3] * 5})
    runs = []
    for name, builds in (("cold", CompilingBuilds(3)), ("warm", None)):
        (tmp_path / name).mkdir()
        runner = Runner("cuda", tmp_path / name, TimingSettings(), builds=builds,
                        lanes=[GpuLane("cuda:0", "GPU-a"), GpuLane("cuda:1", "GPU-b")])
        runner.run(two_groups("cuda"))
        runs.append(runner)
    cold, warm = runs
    assert cold.env["interference"]["source"] == ""  # measured here, not reused
    assert cold.env["interference"]["beside_builds"] == 3
    assert cold.interference.summary().endswith("): UNSURE (beside 3 builds compiling)")
    assert warm.interference.summary().endswith("by run cold, beside 3 builds compiling)")
    assert warm.env["interference"]["beside_builds"] == 3


def test_a_slowdown_beside_compiling_builds_is_not_blamed_on_the_devices_alone():
    from gpubench.run.interference.reference import assess

    alone = {("cuda:0", "matmul N=256"): [1.0e-3 + i * 1e-7 for i in range(30)]}
    together = {("cuda:0", "matmul N=256"): [1.2e-3 + i * 1e-7 for i in range(30)]}
    plain = assess(alone, together, 2)
    beside = assess(alone, together, 2, beside_builds=4)
    assert "slowed each other" in plain.warning()
    assert "while 4 builds compiled on this host" in beside.warning()
    assert "GPUBENCH_INTERFERENCE_MAX_AGE_S=0" in beside.warning()


def test_the_build_phase_counts_the_builds_that_compiled_since_a_moment(tmp_path):
    from gpubench.records.worker_result import WorkerResult
    from gpubench.run.build_phase import BuildJob, BuildPhase

    def job(started, finished=None, cached=None):
        outcome = None if finished is None else Outcome(
            WorkerResult("ok", build=BuildInfo(cached=cached)) if cached is not None else None,
            failure=None if cached is not None else "CRASHED")
        return BuildJob(None, (started,), True, False, outcome, started, finished)

    phase = BuildPhase([], "cuda", tmp_path, 60.0)
    phase.jobs = {i: j for i, j in enumerate([
        job(1.0, 4.0, cached=False),  # compiled, ended after 3.0: counted
        job(1.0, 2.0, cached=False),  # ended before 3.0
        job(3.5, 4.0, cached=True),  # found cached: no compiler ran
        job(3.8),  # still running
        job(3.1, 3.9),  # crashed after 3.0: it ran its compilers
    ])}
    phase.jobs[5] = BuildJob(None, ("queued",), True, False)  # not started
    assert phase.compiled_during(3.0) == 3


def test_the_gpus_facts_before_any_worker_starts_make_the_workers_key(monkeypatch):
    """Every GPU of the machine, one lane each: NVML's UUIDs are the lanes' whichever lane
    has which, so the key is the one the workers' own facts give."""
    import platform

    import torch

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    from gpubench.build import nvml

    monkeypatch.setattr(nvml, "each_gpu", lambda query: [("GPU-b", "580"), ("GPU-a", "580")])
    early = cache.early_facts(2)
    workers = [facts("cuda:0", "GPU-a", host=platform.node(), torch=torch.__version__),
               facts("cuda:1", "GPU-b", host=platform.node(), torch=torch.__version__)]
    assert cache.key_for(early, "Lane", "ref") == cache.key_for(workers, "Lane", "ref")
    assert cache.early_facts(3) is None  # not every GPU has a lane
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert cache.early_facts(2) is None  # CUDA shows a part (or another order) of NVML's
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(nvml, "each_gpu", lambda query: None)  # no NVML
    assert cache.early_facts(2) is None


class StartCountingLane(GpuLane):
    starts = 0

    def start(self) -> dict:
        StartCountingLane.starts += 1
        return self.env


def test_a_reference_found_before_the_workers_start_keeps_no_lane_waiting(tmp_path,
                                                                          monkeypatch):
    """The second run finds the first one's samples from NVML's facts alone: no lane is
    started for the reference, and the samples are assessed once the lanes' workers
    have said which GPU each has."""
    monkeypatch.setattr(cache, "early_facts", lambda lanes: TWO if lanes == 2 else None)
    StartCountingLane.starts = 0
    (_, second), rounds = run_twice_on_two_gpus(
        tmp_path, monkeypatch, lambda: [StartCountingLane("cuda:0", "GPU-a"),
                                        StartCountingLane("cuda:1", "GPU-b")])
    assert sorted(rounds) == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]  # the first run's
    assert StartCountingLane.starts == 2  # the first run's lanes, started for its rounds
    assert second.env["interference"]["source"].startswith("reused: measured ")
    assert [s.device_id for s in second.interference.shifts] == ["cuda:0", "cuda:1"]


def test_a_remote_clusters_lanes_wait_for_their_workers_facts(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(cache, "early_facts", lambda lanes: asked.append(lanes) or TWO)

    class RemoteLane(GpuLane):
        on_this_host = False

    (_, second), _ = run_twice_on_two_gpus(
        tmp_path, monkeypatch, lambda: [RemoteLane("cuda:0", "GPU-a"),
                                        RemoteLane("cuda:1", "GPU-b")])
    assert asked == []  # never asked: the key comes from the workers' facts
    assert second.env["interference"]["source"].startswith("reused: measured ")

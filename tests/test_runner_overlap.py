"""The parent's work between points (issue 32): a lane waits only for its point's save; a
finished group's derivation and table come after the lane has its next point (on a GPU),
and before it on the CPU, where the parent's work would compete with the timed code."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from conftest import REPO
from gpubench.families import compiled
from gpubench.families.discovery import load_family
from gpubench.families.spec import Machine
from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.run.lanes.lane import Outcome, Slot
from gpubench.run.plan import plan_points
from gpubench.run.runner import Runner
from gpubench.timing.settings import TimingSettings


class RecordingLane:
    """A lane that runs nothing: each point is an ERROR row at once. `started` is set when
    its second point begins."""

    def __init__(self, device: str):
        self.slot, self.env = Slot(device, f"{device}:0"), {}
        self.calls, self.started = 0, threading.Event()

    def start(self) -> dict:
        return {}

    def execute(self, task, timeout_s, build_timeout_s, on_phase) -> Outcome:
        self.calls += 1
        if self.calls == 2:
            self.started.set()
        return Outcome(failure=R.ERROR, error="not run: a test lane")

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


def two_groups(device: str) -> list:
    """square's torch variant at two sizes: two groups of one point each."""
    with compiled.run_settings("off"):
        family = load_family("square", REPO / "kernels" / "square")
    points = plan_points([family], Machine(has_cuda=device == "cuda", has_triton=False,
                                           device_name=device))
    return [p for p in points if p.variant.name == "torch"][:2]


@pytest.mark.parametrize("device, overlap", [("cuda", True), ("cpu", False)])
def test_a_group_is_finished_while_the_lane_runs_its_next_point_on_a_gpu(tmp_path, device,
                                                                        overlap):
    """The first group's table waits (up to 2 s) for the lane's second point to begin: it
    begins on a GPU, where the lane was released after the save; on the CPU the lane is
    still waiting for the parent, which is busy with that very table."""
    lane = RecordingLane(device)
    runner = Runner(device, tmp_path, TimingSettings(), lanes=[lane])
    during_first_table: list[bool] = []

    def listener(event) -> None:
        if isinstance(event, E.GroupDone) and not during_first_table:
            during_first_table.append(lane.started.wait(2.0))

    runner.subscribe(listener)
    points = two_groups(device)
    assert len({p.group for p in points}) == 2
    runner.run(points)
    assert during_first_table == [overlap]
    assert lane.calls == 2 and len(runner.results) == 2 * len(runner._modes())


def test_the_not_run_rows_of_a_save_are_made_once(tmp_path):
    """A save reuses each row's serialised text by identity (records/saved_rows.py): the
    NOT_RUN placeholders of points still to come must be the same objects save after save."""
    from gpubench.store.folder import RunFolder
    from gpubench.store.run_saver import RunSaver

    points = two_groups("cpu")
    saver = RunSaver(RunFolder(tmp_path / "run"), {}, points, ("cpu",))
    first, again = saver.unrun("no status yet"), saver.unrun("no status yet")
    assert first and all(a is b for a, b in zip(first, again, strict=True))
    assert saver.unrun("never ran")[0] is not first[0]  # another reason, another row


def test_a_killed_runs_prestart_folder_is_swept_by_the_next_run(tmp_path):
    """`kill -9` of gpubench leaves its prestart folder; the next run removes those whose
    owner is gone, and nothing else."""
    import subprocess
    import sys

    from gpubench.run.lanes.prestart import FOLDER_PREFIX, OWNER_FILE, sweep_stale_folders

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    folders = {}
    for name, owner in (("dead", gone), ("alive", str(os.getpid())), ("unowned", None)):
        folder = tmp_path / f"{FOLDER_PREFIX}{name}"
        folder.mkdir()
        (folder / "worker-0.log").write_text("log")
        if owner is not None:
            (folder / OWNER_FILE).write_text(owner)
        folders[name] = folder
    assert sweep_stale_folders(tmp_path) == [folders["dead"]]
    assert not folders["dead"].exists()
    assert folders["alive"].exists() and folders["unowned"].exists()


def test_a_killed_runs_scratch_folder_is_swept_by_the_next_runs(tmp_path, monkeypatch):
    """`kill -9` of gpubench leaves its scratch folder (TMPDIR of its builds); the next
    run's, when made, removes those whose owner pid is gone or reused, and nothing else."""
    import subprocess
    import sys

    from gpubench.run.lanes import scratch
    from gpubench.run.lanes.processes import start_time

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    me = os.getpid()
    folders = {name: tmp_path / f"{scratch.PREFIX}{owner}-abc123"
               for name, owner in (("dead", f"{gone}-0"), ("reused", f"{me}-1"),
                                   ("alive", f"{me}-{start_time(me) or 0}"),
                                   ("older", "xyz"))}
    for folder in folders.values():
        folder.mkdir()
        (folder / "ccLEFT.s").write_text("")
    monkeypatch.setattr(scratch, "_folder", [])
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(scratch.tempfile, "tempdir", None)
    made = Path(scratch.scratch_dir())  # the next run's: the sweep, then its own
    assert not folders["dead"].exists() and not folders["reused"].exists()
    assert folders["alive"].exists() and folders["older"].exists()
    assert made.parent == tmp_path and scratch.owner(made) == (me, start_time(me))
    assert scratch.sweep_stale_scratch(tmp_path) == []  # its own is alive


@pytest.mark.parametrize("device, points_run_before_first_table", [("cuda", 3), ("cpu", 1)])
def test_a_slow_group_derivation_holds_no_lane_on_a_gpu(tmp_path, monkeypatch, device,
                                                         points_run_before_first_table):
    """On a GPU, groups are derived on a thread of their own: a lane whose point finishes
    while a group's bootstrap CIs are computed (~1 s for launch-bound rows) is saved and
    released at once, so all three points run before the slow first group's table. On the
    CPU the group is derived before the lane takes its next point, as before."""
    from gpubench.run import deriver as deriver_module
    from gpubench.run import runner as runner_module

    real = runner_module.finish_group
    slow_once = threading.Event()

    def slow_first(group, ceilings):
        if not slow_once.is_set():
            slow_once.set()
            threading.Event().wait(1.5)
        return real(group, ceilings)

    monkeypatch.setattr(runner_module, "finish_group", slow_first)  # here and now
    monkeypatch.setattr(deriver_module, "finish_group", slow_first)  # on the deriver
    lane = RecordingLane(device)
    runner = Runner(device, tmp_path, TimingSettings(), lanes=[lane])
    calls_at_first_table: list[int] = []
    runner.subscribe(lambda event: isinstance(event, E.GroupDone) and not calls_at_first_table
                     and calls_at_first_table.append(lane.calls))
    with compiled.run_settings("off"):
        family = load_family("square", REPO / "kernels" / "square")
    machine = Machine(has_cuda=device == "cuda", has_triton=False, device_name=device)
    points = [p for p in plan_points([family], machine, dtypes=("float32", "float16"))
              if p.variant.name == "torch"][:3]
    assert len({p.group for p in points}) == 3
    results = runner.run(points)
    assert calls_at_first_table == [points_run_before_first_table]
    assert [r.key for r in results] == [r.key for p in points for r in runner._expand(
        p, R.ERROR, None)]  # plan order, every group finished once


def test_the_interference_references_groups_are_kept_until_the_runs_points(monkeypatch):
    """Its two probes alternate round after round (together, then each lane alone): the
    worker keeps both groups (inputs and float64 references: ~0.2 s to remake at 8192^3
    on a GPU) side by side, and lets them go at the run's first own point."""
    from dataclasses import replace

    from gpubench.run.interference.timing import REFERENCE_TIMING
    from gpubench.run.reference import reference_points
    from gpubench.run.worker import execute

    made = []
    real = execute.make_group
    monkeypatch.setattr(execute, "make_group",
                        lambda *args: made.append(args[3]) or real(*args))
    executor = execute.Executor(Machine(has_cuda=False, has_triton=False), lambda p: None)
    timing = replace(TimingSettings(), modes=("host",), **REFERENCE_TIMING)
    probes = [p.task(-1 - i, timing) for i, p in enumerate(reference_points("cpu", 0))]
    for _ in range(3):  # together, then two lanes alone
        assert [executor.run(t).status for t in probes] == [R.OK] * len(probes)
    assert len(made) == len(probes) == len(executor.references)
    point = two_groups("cpu")[0]
    executor.run(point.task(0, replace(timing, modes=("host",))))
    assert not executor.references and len(made) == len(probes) + 1


def test_the_interference_rounds_keep_the_events_they_do_not_read(tmp_path):
    """The build phase can end while the interference reference is timed: its event goes
    back on the queue for the dispatch loop (its line on the console), not away."""
    runner = Runner("cuda", tmp_path, TimingSettings(),
                    lanes=[RecordingLane("cuda"), RecordingLane("cuda")])
    from gpubench.records import events as E
    from gpubench.run.build_phase import BuildsDone

    runner._events.put(BuildsDone({"builds": 2}))
    runner._events.put(E.WorkerStarted({"device_id": "cuda:0", "gpu": "test GPU"}))
    runner._flush_device_events()
    assert "cuda:0" in runner.devices
    assert list(runner._pending_events()) == [BuildsDone({"builds": 2})]

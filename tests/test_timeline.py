"""The run timeline (GPUBENCH_TIMELINE) and the worker's start helpers behind issue 32's
fixed-cost figures: marks from several processes land in one file that
benchmarks/timeline.py reads back in order; the helpers never fail a start."""

from __future__ import annotations

import subprocess
import sys
import threading
import types

from conftest import load_script
from gpubench.build import key
from gpubench.run import timeline
from gpubench.run.worker import prewarm


def _timeline_script():
    return load_script("benchmarks/timeline.py", "timeline_script")


def test_marks_from_two_processes_are_read_back_in_time_order(tmp_path, monkeypatch):
    path = tmp_path / "run.timeline"
    monkeypatch.setenv(timeline.ENV, str(path))
    timeline.mark_process_start("parent")
    code = ("from gpubench.run import timeline; timeline.mark_process_start('worker'); "
            "timeline.mark('worker: hello sent')")
    subprocess.run([sys.executable, "-c", code], check=True)
    timeline.mark("parent: exit (fast)")
    marks = _timeline_script().read_marks(path)
    labels = [label for _, _, label in marks]
    assert labels[0] == "parent: process started"
    assert labels[-1] == "parent: exit (fast)"
    assert labels.index("worker: process started") < labels.index("worker: hello sent")
    rows = _timeline_script().table(marks)
    assert any("| worker 1 | hello sent |" in row for row in rows)
    assert rows[2].startswith("| 0.000 | parent | process started")


def test_a_label_is_shown_escaped_on_one_row(tmp_path):
    """A thread's name in a label (the parent's exit) cannot break the table or the
    terminal: control characters escaped, '|' escaped, newlines not split."""
    path = tmp_path / "run.timeline"
    path.write_text("1.0 7 parent: process started\nnot a mark\n"
                    "2.0 7 parent: exit (threads alive: \x1b[2Jx|y)\n")
    rows = _timeline_script().table(_timeline_script().read_marks(path))
    assert len(rows) == 4
    assert "\x1b" not in rows[3] and "\\x1b[2J" in rows[3] and "x\\|y" in rows[3]


def test_no_timeline_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(timeline.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    timeline.mark("parent: exit (fast)")
    assert list(tmp_path.iterdir()) == []


def test_process_start_is_before_now():
    started = timeline.process_started()
    import time

    assert started is not None and started <= time.time()


def test_driver_thread_ends_quietly_without_a_driver():
    """On this CPU machine libcuda is absent (or has no GPU): the thread ends, no error."""
    thread = prewarm.start_driver()
    thread.join(timeout=30)
    assert not thread.is_alive()


def test_prewarm_reports_each_step(monkeypatch):
    ran = []
    monkeypatch.setattr(prewarm, "STEPS", (("one", lambda: ran.append(1), False),
                                           ("fails", lambda: 1 / 0, False)))
    line = prewarm.Prewarm().wait()
    assert ran == [1]
    assert "one " in line and "fails " in line and "waited" in line


def test_a_prewarm_started_before_torch_holds_its_torch_steps_back(monkeypatch):
    """Started before torch's import (the worker's start), the steps that import torch
    wait for torch_imported(); the others run at once."""
    ran = []
    free = threading.Event()
    monkeypatch.setattr(prewarm, "STEPS", (("triton", lambda: (ran.append("triton"),
                                                                 free.set()), False),
                                           ("cpp", lambda: ran.append("cpp"), True)))
    early = prewarm.Prewarm(torch_pending=True)
    assert free.wait(10)
    early.thread.join(timeout=0.2)
    assert ran == ["triton"] and early.thread.is_alive()
    early.torch_imported()
    early.wait()
    assert ran == ["triton", "cpp"]


def _fake_nvml(capabilities):
    fake = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: len(capabilities),
        nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetCudaComputeCapability=lambda handle: capabilities[handle])
    return fake


def test_nvml_capability_is_the_gpus_common_one(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([(9, 0), (9, 0)]))
    key.nvml_capability.cache_clear()
    try:
        assert key.nvml_capability() == (9, 0)
        monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([(9, 0), (8, 0)]))
        key.nvml_capability.cache_clear()
        assert key.nvml_capability() is None  # torch's device 0 decides, as before
    finally:
        key.nvml_capability.cache_clear()


def test_workers_start_early_only_for_a_plain_run():
    """The CLI starts workers before importing the run command only where RunCommand would
    start the same ones: not for --watch, --cluster, or options that contradict."""
    from gpubench.commands.run_request import RunRequest, starts_workers_early
    from gpubench.run.config import RunConfig

    config = RunConfig()
    assert starts_workers_early(RunRequest(config))
    assert starts_workers_early(RunRequest(config, devices="all"))
    assert not starts_workers_early(RunRequest(config, watch=True))
    assert not starts_workers_early(RunRequest(config, cluster="local"))
    assert not starts_workers_early(RunRequest(config, devices="all", workers=2))
    assert not starts_workers_early(RunRequest(config, devices="all", device="cpu"))


def test_prestart_counts_the_gpus_nvml_lists(monkeypatch):
    """The early start's slots come from NVML's GPU count, without torch; no NVML, no GPU."""
    from gpubench.run.lanes import prestart

    monkeypatch.setattr(prestart, "_torch_has_cuda", lambda: True)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([(9, 0), (9, 0), (9, 0)]))
    assert prestart._nvml_gpus() == ["0", "1", "2"]
    monkeypatch.setitem(sys.modules, "pynvml", None)  # `import pynvml` fails
    assert prestart._nvml_gpus() == []

"""A GPU worker warms Triton while it waits for its first task (run/prewarm): the first task
waits for what is left, a failure is a line in the log (the task meets it itself), and
nothing runs without Triton or when turned off."""

from __future__ import annotations

import time

from gpubench.run import prewarm
from gpubench.run.prewarm import Prewarm


def test_the_first_task_waits_for_what_is_left(monkeypatch):
    import gpubench.run.prewarm.kernel as kernel

    monkeypatch.setattr(kernel, "launch_once", lambda: time.sleep(0.3))
    warm = Prewarm()
    warm.start(True)
    time.sleep(0.1)  # the worker's idle time before its first task
    line = warm.wait()
    assert "prewarm (Triton's first launch): 0.3" in line
    waited = float(line.split("waited ")[1].split(" s")[0])
    assert 0.1 <= waited <= 0.29, line
    assert warm.wait() is None  # once


def test_a_failed_warm_is_a_log_line_not_an_error(monkeypatch):
    import gpubench.run.prewarm.kernel as kernel

    def fails():
        raise RuntimeError("no CUDA GPU")

    monkeypatch.setattr(kernel, "launch_once", fails)
    warm = Prewarm()
    warm.start(True)
    assert "failed: RuntimeError: no CUDA GPU" in warm.wait()


def test_nothing_runs_without_triton_or_when_turned_off(monkeypatch):
    warm = Prewarm()
    warm.start(False)
    assert warm.wait() is None
    monkeypatch.setenv(prewarm.ENV, "0")
    warm.start(True)
    assert warm.wait() is None

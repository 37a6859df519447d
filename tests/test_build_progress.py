"""A long build says what it does (run/build_progress.py, report/live.py): a fake ninja
that has written one of its three outputs and runs a "compiler" of main.cpp is seen from
/proc as 'ninja [2/3]: compiling main.cpp', given as the build phase's detail with the
time so far; the live view shows it on its line, or piped, as an occasional line."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import time
from types import SimpleNamespace

from rich.console import Console

from gpubench.records import events as E
from gpubench.report.live import PlainProgress, RunDisplay
from gpubench.run.build_progress import activity, build_progress
from gpubench.run.lanes.processes import descendants

BUILD_NINJA = """rule compile
  command = c++ -c $in -o $out
build main.o: compile main.cpp
build cuda.cuda.o: compile cuda.cu
build sq.so: link main.o cuda.cuda.o
build all: phony sq.so
"""


POINT = E.PointRef("sq", "cpp", "n=2^20", "float32")


def fake_build(tmp_path) -> subprocess.Popen:
    """A shell (the worker) running `ninja` (a script by that name) in a build folder: it
    writes main.o, then runs a long "compile" of cuda.cu."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "build.ninja").write_text(BUILD_NINJA)
    (folder / "sq.so").write_text("old")  # from an earlier build: not counted
    old = time.time() - 3600
    os.utime(folder / "sq.so", (old, old))
    ninja = tmp_path / "ninja"
    # ninja runs each job through /bin/sh -c "command"
    ninja.write_text("#!/bin/sh\nsleep 1\ntouch main.o\n"
                     "/bin/sh -c 'sleep 60 || c++ -c cuda.cu -o cuda.cuda.o'\n")
    ninja.chmod(0o755)
    return subprocess.Popen(["/bin/sh", "-c", f"cd '{folder}' && '{ninja}'; :"])


def wait_for(found, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}")


def test_a_builds_steps_and_compiling_file_are_seen_and_reported(tmp_path):
    worker = fake_build(tmp_path)
    try:
        seen = wait_for(lambda: (a := activity(worker.pid)) and "compiling" in a and a,
                        "the compile")
        assert seen.startswith("ninja [2/3]: compiling cuda.cu"), seen

        put: list = []
        lane = SimpleNamespace(worker=SimpleNamespace(process=worker))
        with build_progress(lane, POINT, put.append, interval_s=0.1) as on_phase:
            on_phase("build")
            detail = wait_for(lambda: [m.detail for m in put if m.detail], "a detail")
            on_phase("check")  # the build is over: no more details
            time.sleep(0.3)
            after = len(put)
            time.sleep(0.3)
        assert put[0] == E.Phase(POINT, "build")
        assert detail[0].endswith(" s: ninja [2/3]: compiling cuda.cu"), detail
        assert E.Phase(POINT, "check") in put and len(put) == after
    finally:
        for pid in reversed(descendants(worker.pid)):  # the fake ninja and its compiler
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        worker.kill()
        worker.wait()


def test_no_ninja_no_activity():
    assert activity(os.getpid()) is None


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_piped_a_long_build_says_its_progress_now_and_then():
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=False, width=200, color_system=None)
    clock = FakeClock()
    lines = PlainProgress(console, total=1, clock=clock)
    label = "sq/cpp n=2^20 float32"
    lines.phase(label, "build")
    lines.detail(label, "2 s: ninja [1/3]")  # not announced yet: nothing
    clock.now += 3.5
    lines.announce()
    for _ in range(30):  # a detail every 2 s for 60 s: said every DETAIL_EVERY_S
        clock.now += 2.0
        lines.detail(label, f"{clock.now - 100:.0f} s: ninja [1/3]: compiling main.cpp")
    said = sink.getvalue().splitlines()
    assert said[0] == f"{label}: build ..."
    assert said[1:] == [f"{label}: build ... {s} s: ninja [1/3]: compiling main.cpp"
                        for s in (24, 44, 64)], said


def test_a_terminal_shows_the_progress_on_the_status_line():
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    display = RunDisplay(console, total=1)
    point = E.PointRef("sq", "cpp", "n=2^20", "float32")
    display(E.Phase(point, "build"))
    display(E.Phase(point, "build", "42 s: ninja [1/3]: compiling main.cpp"))
    task = display.progress.tasks[0]
    assert task.description.endswith("build, 42 s: ninja [1/3]: compiling main.cpp")


def test_a_build_of_sources_built_under_another_family_name_says_why(tmp_path, monkeypatch):
    """A copy of a family under another name builds again (a build is named after its
    family): the build's note says so, naming the build it could have been."""
    from gpubench.build import compile as C

    monkeypatch.setattr(C, "cache_root", lambda: tmp_path)
    key = "ae7b59abe7b3" + "0" * 52
    assert C._renamed("gb_square2_cpu_ae7b59abe7b3", key) is None
    (tmp_path / "gb_square_cpu_ae7b59abe7b3").mkdir()
    (tmp_path / "gb_square_cuda_ae7b59abe7b3").mkdir()  # another kind: never this one
    note = C._renamed("gb_square2_cpu_ae7b59abe7b3", key)
    assert note.startswith("not cached: the same sources are built as gb_square_cpu_ae7b59abe7b3")
    assert "named after its family" in note


def test_piped_the_build_phase_s_builds_are_followed_while_the_lanes_wait():
    """Builder processes compile for points no lane holds: with no phase current, the
    first build's detail becomes the phase followed, announced after QUIET_S; another
    build's details are not interleaved with it."""
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=False, width=200, color_system=None)
    clock = FakeClock()
    lines = PlainProgress(console, total=2, clock=clock)
    first, second = "two/first n=256 float32", "two/second n=256 float32"
    lines.detail(first, "2 s: ninja [1/2]: compiling first.cpp")
    lines.detail(second, "2 s: ninja [1/2]: compiling second.cpp")
    clock.now += 3.5
    lines.announce()
    for _ in range(11):
        clock.now += 2.0
        lines.detail(second, f"{clock.now - 100:.0f} s: ninja [1/2]: compiling second.cpp")
        lines.detail(first, f"{clock.now - 100:.0f} s: ninja [1/2]: compiling first.cpp")
    lines.close()
    said = sink.getvalue().splitlines()
    assert said == [f"{first}: build ...",
                    f"{first}: build ... 24 s: ninja [1/2]: compiling first.cpp"], said


def test_the_build_phase_reports_each_running_build(tmp_path):
    """build_progress.report_builds: every interval, a detail for each build the phase
    lists as running, read from its builder's process tree; nothing once it is over."""
    import threading

    from gpubench.run.build_progress import report_builds

    worker = fake_build(tmp_path)
    put: list = []
    over = threading.Event()
    try:
        report_builds(lambda: [(POINT, worker, time.monotonic() - 5)], put.append, over,
                      interval_s=0.1)
        detail = wait_for(lambda: [m for m in put if "compiling" in m.detail], "a detail")
        over.set()
        time.sleep(0.3)
        after = len(put)
        time.sleep(0.3)
        assert detail[0].point == POINT and detail[0].phase == "build"
        assert detail[0].detail.startswith("5 s: ninja [2/3]: compiling cuda.cu") or \
            detail[0].detail.startswith("6 s: ninja [2/3]: compiling cuda.cu"), detail[0]
        assert len(put) == after
    finally:
        over.set()
        for pid in reversed(descendants(worker.pid)):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        worker.kill()
        worker.wait()


def test_a_process_reaped_while_its_tree_is_read_has_no_children(tmp_path, monkeypatch):
    """/proc/PID/task vanishes when PID is reaped; a read of it then was a FileNotFoundError
    that ended the build phase's progress thread (seen once in CI), and would end a kill of
    a process tree the same way. A vanished process has no children; a live one's are read;
    and a walk of this process's tree while children end and are reaped raises nothing (the
    old code raised there about once in 5 s of such walks)."""
    from gpubench.run.lanes import processes

    monkeypatch.setattr(processes, "PROC", tmp_path)
    task = tmp_path / "123" / "task" / "123"
    task.mkdir(parents=True)
    (task / "children").write_text("456 789")
    assert processes.children(123) == [456, 789]
    (task / "children").unlink()
    task.rmdir()
    task.parent.rmdir()  # reaped between the look at /proc/123 and the listing of its threads
    assert processes.children(123) == []
    monkeypatch.undo()
    # and on the real /proc, children that come and go while the tree is walked
    spawned = [subprocess.Popen(["sleep", "0.01"]) for _ in range(20)]
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        descendants(os.getpid())
        for index, child in enumerate(spawned):
            if child.poll() is not None:
                spawned[index] = subprocess.Popen(["sleep", "0.01"])
    for child in spawned:
        child.wait()

"""What a long build is doing, told while it runs: the point's worker compiles in phase
"build", and a C++ variant's first build can take minutes (183 s and 2.1 GB for the
guide's simplest CPU variant on 2 cores) with nothing else to show.

While a point's worker is in phase "build", a thread of the parent looks every
INTERVAL_S at the worker's process tree (/proc: no message from the worker, which
may be running a variant's code the parent does not trust) and puts what it sees on the
runner's queue as a detail of that phase (records/events.py Phase.detail): the time
in the build so far, ninja's step ([k/n]: the outputs of build.ninja written since ninja
started, of all it lists), the file each compiler compiles or the library it links, and
their memory. The live view shows it on its status line (a terminal) or as an
occasional line (piped: report/live.py PlainProgress). A run with several builds
compiles them up front in builder processes (run/build_phase.py); `report_builds` tells
each of those the same way, as the phase of the point it is built for.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gpubench.records import events as E
from gpubench.run.lanes.processes import PROC, children, descendants

INTERVAL_S = 2.0
BUILD_PHASE = "build"
SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".cu")
_EDGE = re.compile(r"^build\s+(\S+?)\s*:\s*(\S+)", re.MULTILINE)


@contextmanager
def build_progress(lane, point: E.PointRef, put: Callable[[object], None],
                   interval_s: float = INTERVAL_S) -> Iterator[Callable[[str], None]]:
    """The `on_phase` to give lane.execute for `point`: each phase goes on the queue
    (events.Phase), and while it is the build, a detail every `interval_s`; the watching
    ends with the block."""
    state = {"phase": None, "since": 0.0}
    changed = threading.Event()
    done = threading.Event()

    def on_phase(phase: str) -> None:
        state["phase"], state["since"] = phase, time.monotonic()
        put(E.Phase(point, phase))
        changed.set()

    def watch() -> None:
        while not done.is_set():
            if state["phase"] != BUILD_PHASE:
                changed.wait()
                changed.clear()
                continue
            if done.wait(interval_s) or state["phase"] != BUILD_PHASE:
                continue
            process = getattr(getattr(lane, "worker", None), "process", None)
            put(E.Phase(point, BUILD_PHASE, build_detail(process, state["since"])))

    thread = threading.Thread(target=watch, daemon=True, name="gpubench-build-progress")
    thread.start()
    try:
        yield on_phase
    finally:
        done.set()
        changed.set()


def report_builds(running: Callable[[], list[tuple[E.PointRef, object, float]]],
                  put: Callable[[object], None], over: threading.Event,
                  interval_s: float = INTERVAL_S) -> threading.Thread:
    """The build phase's reporter (run/build_phase.py), started: every `interval_s` until
    `over` is set, a detail of each build `running()` lists as (point, its builder's
    Popen, time.monotonic() at its start). Several builders compile side by side, each
    for a point no lane has taken yet, so each build is told as that point's phase."""
    def watch() -> None:
        while not over.wait(interval_s):
            for point, process, since in running():
                put(E.Phase(point, BUILD_PHASE, build_detail(process, since)))

    thread = threading.Thread(target=watch, daemon=True, name="gpubench-builds-progress")
    thread.start()
    return thread


def build_detail(process, since: float) -> str:
    """'42 s: ninja [1/3]: compiling main.cpp, 1.4 GB': the time in the build since
    `since` (time.monotonic()) and what the build under `process` (a Popen, or None) does."""
    seen = activity(process.pid) if process is not None else None
    return f"{time.monotonic() - since:.0f} s" + (f": {seen}" if seen else "")


def activity(root: int) -> str | None:
    """What the build under process `root` does now: 'ninja [1/3]: compiling main.cpp,
    1.4 GB' (the memory of ninja's compilers); None when no ninja runs under it (torch's
    own steps, gpubench's cache)."""
    ninja = next((pid for pid in descendants(root)
                  if _read(PROC / str(pid) / "comm").strip() == "ninja"), None)
    if ninja is None:
        return None
    steps = ninja_steps(ninja)
    doing = [what for child in children(ninja) if (what := _job(child))]
    rss = sum(_rss(pid) for pid in descendants(ninja))
    line = f"ninja [{steps[0]}/{steps[1]}]" if steps else "ninja"
    if doing:
        line += ": " + ", ".join(doing)
    return line + (f", {rss / (1 << 30):.1f} GB" if rss >= 1 << 26 else "")


def ninja_steps(pid: int) -> tuple[int, int] | None:
    """(written, listed): of the outputs build.ninja (in ninja's folder) lists, how many
    were written since ninja started; None when it cannot be read."""
    try:
        folder = Path(os.readlink(PROC / str(pid) / "cwd"))
        outputs = [out for out, rule in _EDGE.findall((folder / "build.ninja").read_text())
                   if rule != "phony"]
        started = _started_epoch(pid)
    except (OSError, ValueError):
        return None
    if not outputs or started is None:
        return None
    written = sum(1 for out in outputs if _mtime(folder / out) >= started)
    return min(written + 1, len(outputs)), len(outputs)


def _job(pid: int) -> str | None:
    """'compiling main.cpp' or 'linking sq.so' for a job ninja started: a compiler
    driver, or the `/bin/sh -c "c++ ..."` ninja runs it through."""
    args = " ".join(_read(PROC / str(pid) / "cmdline").split("\0")).split()
    sources = [Path(a).name for a in args if a.endswith(SOURCE_SUFFIXES)]
    if "-c" in args and sources:
        return f"compiling {sources[-1]}"
    libraries = [Path(a).name for a in args if a.endswith(".so")]
    if "-shared" in args or libraries:
        return f"linking {libraries[-1]}" if libraries else "linking"
    return None


def _rss(pid: int) -> int:
    for line in _read(PROC / str(pid) / "status").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _started_epoch(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch (/proc: ticks since boot)."""
    fields = _read(PROC / str(pid) / "stat").rsplit(")", 1)[-1].split()
    boot = next((int(line.split()[1]) for line in _read(PROC / "stat").splitlines()
                 if line.startswith("btime ")), None)
    if len(fields) < 20 or boot is None:
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # to a second (btime's)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""

"""The parent's handle on a worker process: start, send a task, wait with a deadline, kill.

The worker runs in its own session, so Ctrl-C in the terminal reaches only the
parent, which then kills everything in that session (the worker, ninja, the
compilers, whatever a variant spawned, in a new session too, since the worker is
their subreaper: see processes.py); a timeout does the same. Its stdout and stderr go
through a pipe to a log file in the run folder, capped in size (the head and the tail
are kept), with Python's faulthandler on, so a segfault leaves a traceback to point at.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from gpubench.build import bytecode
from gpubench.families import compiled
from gpubench.run.judge.dumpable import prctl_dumpable
from gpubench.run.judge.line import JudgeLine
from gpubench.run.lanes import ceilings_guard
from gpubench.run.lanes.processes import kill_session, kill_tree
from gpubench.run.lanes.protocol import Envelope, LineReader, ResultKey
from gpubench.run.lanes.scratch import scratch_dir

# A fresh worker imports torch (1-5 s) and, on a GPU, creates a context (~1 s).
START_TIMEOUT_S = 120.0
# Worker logs keep their first 4 MiB (start-up, build logs, the first errors) and their
# last 1 MiB (what happened just before a crash); a variant printing 100 MB costs 5 MiB.
LOG_HEAD_BYTES = 4 << 20
LOG_TAIL_BYTES = 1 << 20


# The module of a worker that runs tasks (and forks a judge); a build phase's builders
# run gpubench.run.builder.
TASK_WORKER = "gpubench.run.worker.process"


class WorkerDied(Exception):
    """The worker exited without answering; the message says how and what it last printed."""


class WorkerTimeout(Exception):
    """No message from the worker before the deadline."""


class WorkerProcess:
    def __init__(self, device: str, log_path: Path, extra_env: dict | None = None,
                 module: str = TASK_WORKER, env: dict | None = None):
        self.device = device
        self.module = module  # gpubench.run.builder for a build phase's builder
        # The whole environment, fixed now (prestart.py compares it with a lane's); None:
        # worker_env and extra_env as they are when start() runs.
        self.fixed_env = env
        self.log_path = log_path
        self.extra_env = extra_env or {}  # CUDA_VISIBLE_DEVICES of a lane pinned to one GPU
        self._kill_lock = threading.Lock()
        self.process: subprocess.Popen | None = None
        self.reader: LineReader | None = None
        self.log: CappedLog | None = None
        self.env: dict = {}
        self.judge: JudgeLine | None = None  # a task worker's judge (run/judge/)

    def start(self) -> dict:
        """Start the worker and wait for its hello; returns the device environment it reports."""
        # gpubench's own process holds its ends of every worker's pipes (and of its judge's):
        # non-dumpable, they are out of reach of /proc/PID/fd for processes of its user, a
        # variant in any worker included (run/judge/dumpable.py; workers, ncu and compilers
        # exec, which makes them dumpable again). Every worker start passes here, whatever
        # started it (the CLI, the Python API, a test); setting it again changes nothing.
        prctl_dumpable(0)
        read_fd, write_fd = os.pipe()
        log_read, log_write = os.pipe()
        command = [sys.executable, "-m", self.module, "--fd", str(write_fd)]
        if self.module == TASK_WORKER:
            self.judge = JudgeLine()
            command += ["--judge", self.judge.ends.to_arg()]
        try:
            self.process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=log_write, stderr=subprocess.STDOUT,
                pass_fds=(write_fd, *(self.judge.child_fds() if self.judge else ())),
                start_new_session=True,
                env=self.fixed_env or {**worker_env(self.device), **self.extra_env},
            )
        finally:
            os.close(write_fd)
            os.close(log_write)
            if self.judge is not None:
                self.judge.started()
        self.log = CappedLog(log_read, self.log_path)
        self.reader = LineReader(read_fd)
        hello = self.next_message(time.monotonic() + START_TIMEOUT_S)
        if hello.get("type") != "hello":
            self.kill()
            raise WorkerDied(hello.get("error", f"unexpected first message {hello}"))
        self.env = hello["env"]
        ceilings_guard.note_hello(self.env)  # a cache a variant rewrote is put back
        return self.env

    def send(self, line: Envelope | ResultKey) -> None:
        """A task, or the key its result must carry, as one line on the worker's stdin
        (anything with to_json(): a builder's job too)."""
        try:
            self.process.stdin.write((line.to_json() + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self._death_note()) from None

    def next_message(self, deadline: float) -> dict:
        """The next message, waiting until `deadline` (time.monotonic())."""
        message = self.reader.wait(deadline)
        if message is not None:
            return message
        if self.reader.closed:
            raise WorkerDied(self._death_note())
        raise WorkerTimeout()

    def stop(self) -> None:
        """Ask politely (EOF on stdin), then kill."""
        if self.process is None:
            return
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker's whole session (ninja, compilers and a variant's children
        included, though they left the worker's process group) and reap the worker.
        Safe to call from two threads at once (Ctrl-C on the main thread while the lane's
        thread is killing a worker that died): one of them does it."""
        with self._kill_lock:
            process, self.process = self.process, None
            reader, self.reader = self.reader, None
        if process is None:
            return
        if process.poll() is None:
            kill_tree(process.pid)  # new sessions included: the worker is their subreaper
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        kill_session(process.pid)  # the session id is the worker's pid
        if reader is not None:
            os.close(reader.fd)
        if self.judge is not None:
            self.judge.close()
        if self.log is not None:
            self.log.flush_after_exit()

    def log_tail(self, lines: int = 40) -> str:
        if self.log is not None:
            self.log.flush_after_exit()
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _death_note(self) -> str:
        code = self.process.wait(timeout=30) if self.process else None
        if self.process is not None:  # orphans (ninja, a variant's children) hold the log open
            kill_session(self.process.pid)
        how = _describe_exit(code)
        clue = _last_error_line(self.log_tail())
        return f"worker {how}" + (f": {clue}" if clue else "") + f" (log: {self.log_path})"


class CappedLog:
    """Copies a worker's output from a pipe to its log file on a thread: the first
    LOG_HEAD_BYTES as they come, then only the last LOG_TAIL_BYTES, written with a note
    of what was left out when the pipe closes (the worker and its children are gone).
    A worker started before its run folder existed (prestart.py) logs to a temporary
    file first, and `move_to` takes the log, and what follows, to the run folder."""

    def __init__(self, fd: int, path: Path):
        self.fd, self.path = fd, path
        self.written = 0
        self.dropped = 0
        self.tail = bytearray()
        self._lock = threading.Lock()
        self._sink = self._open_sink(path)
        self.thread = threading.Thread(target=self._copy, name="gpubench-log", daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            with self._lock:
                self._take(chunk, self._sink)
        with self._lock:
            if self.dropped:
                self._sink.write(f"\n[gpubench: {self.dropped:,} bytes of worker output left "
                                 f"out; the last {len(self.tail):,} follow]\n".encode())
            self._sink.write(bytes(self.tail))
            self._sink.close()
        os.close(self.fd)

    def move_to(self, path: Path) -> None:
        """Go on in `path`, the log so far moved there (renamed, or copied across file
        systems)."""
        with self._lock:
            open_now = not self._sink.closed
            self._sink.close()
            try:
                os.replace(self.path, path)
            except OSError:
                with contextlib.suppress(OSError):
                    shutil.copyfile(self.path, path)
                    os.unlink(self.path)
            self.path = path
            if open_now:
                self._sink = self._open_sink(path)

    @staticmethod
    def _open_sink(path: Path):
        """The log file, or /dev/null when the run folder no longer takes writes: the pipe
        must be drained either way, or a worker printing 64 KiB would block on it."""
        try:
            return open(path, "ab")
        except OSError:
            return open(os.devnull, "wb")

    def _take(self, chunk: bytes, sink) -> None:
        room = max(LOG_HEAD_BYTES - self.written, 0)
        if room:
            sink.write(chunk[:room])
            sink.flush()
            self.written += min(room, len(chunk))
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - LOG_TAIL_BYTES
            if excess > 0:
                del self.tail[:excess]
                self.dropped += excess

    def flush_after_exit(self, timeout_s: float = 5.0) -> None:
        """Wait (briefly) until the pipe is drained, so the file holds the last words."""
        self.thread.join(timeout_s)


def worker_env(device: str) -> dict:
    """The environment of a worker process (also when ncu or nsys starts it)."""
    env = dict(os.environ)
    env["GPUBENCH_DEVICE"] = device
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # a segfault prints the Python stack to the log
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    # A TORCH_CHECK that fails in a variant's C++ then names its file:line ("Exception
    # raised from f at add.cu:12", records/error_site.py), which c10 leaves out otherwise;
    # the stack it captures with it is not symbolised (addr2line takes seconds a throw).
    # Only a throw pays, ~100 us: never on a passing call's path. A user's own setting wins.
    env.setdefault("TORCH_SHOW_CPP_STACKTRACES", "1")
    env.setdefault("TORCH_DISABLE_ADDR2LINE", "1")
    env.update(compiled.worker_environment())  # Inductor's caches under gpubench's
    env["TMPDIR"] = scratch_dir()  # compilers' temporary files: removed with the run
    # The worker must import the same gpubench as the parent, installed or not.
    package_root = str(Path(__file__).resolve().parents[3])  # the folder holding gpubench/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return bytecode.for_child(env)  # torch's import: ~2.5 s less where bytecode was off


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _last_error_line(text: str) -> str:
    """The most telling line of a worker log: a fatal error with the kernel's frame,
    else the last line that mentions an error."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if line.startswith("Fatal Python error"):
            site = _crash_site(lines[index + 1:])
            return f"{line} in {site}" if site else line
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[:300]
    return ""


def _crash_site(frames: list[str]) -> str:
    """faulthandler lists frames innermost first; the frame just before the first one in
    gpubench itself is the variant's code that crashed ('spec.py, line 30 in segfault')."""
    package = str(Path(__file__).resolve().parents[2])  # gpubench/
    previous = ""
    for line in frames:
        match = re.match(r'File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<fn>\S+)', line)
        if not match:
            continue
        if match["file"].startswith(package):
            return previous
        previous = f"{match['file']}:{match['line']} ({match['fn']})"
    return previous
